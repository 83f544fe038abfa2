"""Recipe: FM statistics of a Ray Dataset, one release on the driver.

``map_batches`` reduces each batch to its FM statistics on the Ray workers with
the (unfitted) estimator, which carries the declared domain; the driver merges the
small per-batch statistics and makes the single release with ``fit_statistics``.
"""

import pickle

import numpy as np


def fm_statistics_ray(estimator, dataset, feature_columns, label_column):
    """The estimator's exact FM statistics of a ``ray.data.Dataset``.

    Parameters
    ----------
    estimator : FMLinearRegression or FMLogisticRegression
        Unfitted, with its domain declared.
    dataset : ray.data.Dataset
    feature_columns : list of str
    label_column : str

    Returns
    -------
    FMStatistics
    """

    def block_statistics(batch):
        X = np.column_stack([batch[c] for c in feature_columns]).astype(np.float64)
        stats = estimator.statistics(X, batch[label_column])
        # pickle stays inside the cluster that already holds the data
        return {"stats": np.array([pickle.dumps(stats)], dtype=object)}

    parts = dataset.map_batches(block_statistics, batch_format="numpy")
    return sum(pickle.loads(row["stats"]) for row in parts.iter_rows())
