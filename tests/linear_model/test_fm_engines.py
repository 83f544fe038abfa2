"""The Spark and Ray recipes of the user guide give the in-memory model exactly.

Run only where the engine is installed (skipped otherwise) and only with
``-m slow``: each starts a local engine, which takes seconds.
"""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from skdp.linear_model import FMLinearRegression

RECIPES = Path(__file__).resolve().parents[2] / "doc" / "user_guide" / "recipes"
# the engines raise their own DeprecationWarnings (not skdp's) on current pandas
pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
]


def _recipe(name):
    spec = importlib.util.spec_from_file_location(name, RECIPES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _data(n=2000, d=4):
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(n, d))
    return X, X @ np.arange(1.0, d + 1) / d + 0.1 * rng.standard_normal(n)


def _estimator():
    return FMLinearRegression(
        epsilon=1.0, bounds_X=(-1, 1), bounds_y=(-3, 3), random_state=0
    )


def _frame(X, y):
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])])
    frame["y"] = y
    return frame


def test_spark_recipe_gives_the_in_memory_model(monkeypatch):
    pytest.importorskip("pyspark")
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)  # workers need skdp
    from pyspark.sql import SparkSession

    X, y = _data()
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "300")
        .getOrCreate()
    )
    try:
        frame = spark.createDataFrame(_frame(X, y)).repartition(3)
        stats = _recipe("spark_fm").fm_statistics_spark(
            _estimator(), frame, [f"x{j}" for j in range(X.shape[1])], "y"
        )
    finally:
        spark.stop()
    assert stats.n == len(X)
    model = _estimator().fit_statistics(stats)
    np.testing.assert_array_equal(model.coef_, _estimator().fit(X, y).coef_)


def test_ray_recipe_gives_the_in_memory_model():
    ray = pytest.importorskip("ray")
    X, y = _data()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        dataset = ray.data.from_pandas(_frame(X, y)).repartition(4)
        stats = _recipe("ray_fm").fm_statistics_ray(
            _estimator(), dataset, [f"x{j}" for j in range(X.shape[1])], "y"
        )
    finally:
        ray.shutdown()
    assert stats.n == len(X)
    model = _estimator().fit_statistics(stats)
    np.testing.assert_array_equal(model.coef_, _estimator().fit(X, y).coef_)
