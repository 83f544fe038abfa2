"""Vertical FM across organisations: each participant its own process over
mutually authenticated TLS (gRPC).

``skdp-party --config party.toml`` and ``skdp-server --config server.toml`` (or
:func:`run_party` / :func:`run_server`) each host one role of the vertical
protocol and route its messages to the other participants; ``skdp-certs`` makes a
small CA. :func:`load_model` reads the released model as a fitted estimator.
Needs skdp's ``federated`` extra (grpcio, protobuf, cryptography, tenseal,
pyarrow); nothing optional is imported until a run starts.
"""

from skdp.vertical.federated._config import (
    ConfigError,
    PolicyError,
    load_party_config,
    load_server_config,
)
from skdp.vertical.federated._model import ModelFileError, load_model, save_model
from skdp.vertical.federated._node import FederatedError
from skdp.vertical.federated._runtime import run_party, run_server

__all__ = [
    "ConfigError",
    "FederatedError",
    "ModelFileError",
    "PolicyError",
    "load_model",
    "load_party_config",
    "load_server_config",
    "run_party",
    "run_server",
    "save_model",
]
