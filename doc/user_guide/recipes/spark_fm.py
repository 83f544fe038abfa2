"""Recipe: FM statistics of a Spark DataFrame, one release on the driver.

Each Arrow batch is reduced to its FM statistics on the executors by the
(unfitted) estimator, which carries the declared domain; ``treeReduce`` merges the
partial statistics in a tree on the executors; the driver receives one
``FMStatistics`` and makes the single release with ``fit_statistics``.
"""

import operator
import pickle

import numpy as np


def fm_statistics_spark(estimator, frame, features, label_column):
    """The estimator's exact FM statistics of a Spark DataFrame.

    Parameters
    ----------
    estimator : FMLinearRegression or FMLogisticRegression
        Unfitted, with its domain declared (bounds_X and/or data_norm; bounds_y
        or classes).
    frame : pyspark.sql.DataFrame
    features : list of str
        The feature columns.
    label_column : str

    Returns
    -------
    FMStatistics
    """
    import pyarrow as pa

    def block_statistics(batches):
        for batch in batches:
            columns = [batch.column(c).to_numpy(zero_copy_only=False) for c in features]
            X = np.column_stack(columns).astype(np.float64)
            y = batch.column(label_column).to_numpy(zero_copy_only=False)
            # pickle stays inside the cluster that already holds the data
            stats = pickle.dumps(estimator.statistics(X, y))
            yield pa.RecordBatch.from_pydict({"stats": [stats]})

    parts = frame.select(*features, label_column).mapInArrow(
        block_statistics, "stats binary"
    )
    return parts.rdd.map(lambda row: pickle.loads(row.stats)).treeReduce(operator.add)
