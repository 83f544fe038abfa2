"""The functional mechanism over vertically partitioned parties.

Parties hold disjoint columns of the same rows; a server coordinates Algorithm 1 of
Xu, Yuan & Wu (2021) (:mod:`skdp.vertical._protocol`) with a secure scalar-product
backend
(:mod:`skdp.vertical._secure`: ``"plaintext"`` simulation or TenSEAL ``"bfv"``).
Across organisations each participant runs in its own process over mutual TLS
(:mod:`skdp.vertical.federated`: ``skdp-party``, ``skdp-server``); the released
model file loads back with :func:`load_model`.
"""

from skdp.vertical._estimators import VerticalFMClassifier, VerticalFMRegressor
from skdp.vertical._partition import check_label_party, check_partition
from skdp.vertical._protocol import ProtocolError, Transcript
from skdp.vertical.federated import ModelFileError, load_model

__all__ = [
    "ModelFileError",
    "ProtocolError",
    "Transcript",
    "VerticalFMClassifier",
    "VerticalFMRegressor",
    "check_label_party",
    "check_partition",
    "load_model",
]
