"""Vertical FM across organisations: each participant its own process over
mutually authenticated TLS (gRPC).

``skdp-party --config party.toml`` and ``skdp-server --config server.toml`` (or
:func:`run_party` / :func:`run_server`) each host one role of the vertical
protocol (:mod:`skdp.vertical._roles`) and route its messages to the other
participants. Needs ``pip install skdp[federated]`` (grpcio, cryptography, tenseal).
"""
