"""Console scripts: ``skdp-party``, ``skdp-server`` and ``skdp-certs``.

Exit status: 0 when the model was released, 1 when the run failed or was aborted
(the cause is printed on stderr; nothing was released), 2 for a bad command line
or config file (including TLS files that are not what their key says, an
output path that cannot be written, and a listen port that is in use). Found
before any protocol step.

Once the run has ended, the process exits within :data:`EXIT_GRACE` seconds even
if a library thread does not let go (a watchdog calls ``os._exit``).
"""

import argparse
import json
import os
import signal
import sys
import threading
import time

__all__ = ["certs_main", "party_main", "server_main"]

#: Seconds the interpreter may take to shut down after the run has ended
#: (everything that matters, aborts and the model, is done by then).
EXIT_GRACE = 1.5


def _exit_watchdog(code, process=True):
    """Leave with ``code`` after :data:`EXIT_GRACE` s if still running (a gRPC
    thread stuck on a frozen peer must not keep the process alive); only when
    ``process``: this is the console script's own process."""
    if not process:
        return code

    def leave():
        time.sleep(EXIT_GRACE)
        sys.stderr.flush()
        sys.stdout.flush()
        os._exit(code)

    threading.Thread(target=leave, daemon=True).start()
    return code


def _quiet_grpc():
    # gRPC's C core logs handshake failures itself; our error names the cause
    os.environ.setdefault("GRPC_VERBOSITY", "NONE")


def _importable(module):
    """Whether ``module`` imports (not only whether it is installed: a broken
    install, such as a binary built for another Python, fails here too)."""
    import importlib

    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


def _missing_extras():
    """What every run needs: gRPC, protobuf (the wire schema), and
    cryptography to read the TLS files."""
    return [
        m for m in ("grpc", "google.protobuf", "cryptography") if not _importable(m)
    ]


def _missing_for(kind, config):
    """``[(package, why)]`` the run of this config needs and cannot import:
    TenSEAL for the bfv backend (the server's ``model.backend``, a party's
    ``policy.backends``), pyarrow for a Parquet data file."""
    missing = []
    if kind == "server":
        if config.backend == "bfv" and not _importable("tenseal"):
            missing.append(("tenseal", 'model.backend = "bfv"'))
    else:
        if "bfv" in config.policy.backends and not _importable("tenseal"):
            missing.append(("tenseal", 'policy.backends accepts "bfv"'))
        suffix = config.data_path.suffix.lower()
        if suffix in (".parquet", ".pq") and not _importable("pyarrow.parquet"):
            missing.append(("pyarrow", "data.path is a Parquet file"))
    return missing


def _print_install_hint(prog, missing):
    from skdp.utils.extras import install_hint

    print(f"{prog}: needs {missing}: " + install_hint("federated"), file=sys.stderr)


def _on_sigterm(signum, frame):
    raise SystemExit(f"terminated by signal {signum}")


def _run(kind, argv, process):
    started, entered = time.perf_counter(), time.time()  # after the imports
    from skdp.vertical.federated._config import (
        ConfigError,
        load_party_config,
        load_server_config,
    )
    from skdp.vertical.federated._runtime import (
        announce_config_error,
        format_failure,
        run_party,
        run_server,
    )

    parser = argparse.ArgumentParser(
        prog=f"skdp-{kind}",
        description=f"Run the {kind} of a vertical functional-mechanism release.",
    )
    parser.add_argument("--config", required=True, help=f"{kind} TOML config file")
    parser.add_argument("--stats", help="write traffic and result summary (JSON) here")
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="progress on stderr: -v a line per protocol step, -vv per message",
    )
    args = parser.parse_args(argv)
    _quiet_grpc()
    missing = _missing_extras()
    if missing:
        _print_install_hint(f"skdp-{kind}", ", ".join(missing))
        return 2
    try:
        load = load_party_config if kind == "party" else load_server_config
        config = load(args.config)
    except (ConfigError, OSError) as exc:
        print(f"skdp-{kind}: config error: {exc}", file=sys.stderr, flush=True)
        # the peers learn it at once (if the config names them and its TLS
        # files are usable) instead of waiting out their startup for us
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
        try:
            announce_config_error(kind, args.config, exc)
        finally:
            signal.signal(signal.SIGTERM, previous)
        return _exit_watchdog(2, process)
    needed = _missing_for(kind, config)
    if needed:
        what = ", ".join(f"{package} ({why})" for package, why in needed)
        _print_install_hint(f"skdp-{kind}", what)
        return 2
    who = f"skdp-{kind} {config.name}"
    if process:  # the console script's own process: room for the connection cap
        from skdp.vertical.federated._transport import raise_descriptor_limit

        raise_descriptor_limit()
    # SIGTERM aborts the run like any failure: peers are told, nothing released
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        run = run_party if kind == "party" else run_server
        out = run(config, started=started, verbose=args.verbose)
    except ConfigError as exc:  # the listen port, before any protocol step
        print(f"skdp-{kind}: config error: {exc}", file=sys.stderr, flush=True)
        return _exit_watchdog(2, process)
    except BaseException as exc:  # every failure: one line naming the cause
        print(format_failure(who, exc), file=sys.stderr, flush=True)
        return _exit_watchdog(1, process)
    finally:
        signal.signal(signal.SIGTERM, previous)
    traffic = out["traffic"]
    summary = {
        "name": config.name,
        "traffic": traffic,
        "seconds": out["seconds"],
        "entered": entered,
    }
    if kind == "server":
        summary["paths"] = out["paths"]
        print(f"{who}: model released to {out['paths'][1]}", flush=True)
    else:
        print(f"{who}: done", flush=True)
    if args.stats:
        with open(args.stats, "w") as f:
            json.dump(summary, f, indent=2)
    return _exit_watchdog(0, process)


def party_main(argv=None):
    """``skdp-party --config party.toml`` (``argv`` None: the console script)"""
    return _run("party", argv, process=argv is None)


def server_main(argv=None):
    """``skdp-server --config server.toml`` (``argv`` None: the console script)"""
    return _run("server", argv, process=argv is None)


def certs_main(argv=None):
    """``skdp-certs init-ca DIR`` / ``skdp-certs issue DIR NAME [NAME ...]``

    Exit status 2 with the install hint of the ``federated`` extra when
    ``cryptography`` cannot be imported (as ``skdp-party`` and ``skdp-server``).
    """
    from skdp.vertical.federated._certs import init_ca, issue

    parser = argparse.ArgumentParser(
        prog="skdp-certs",
        description="A small CA for tests and small deployments (see the docs for "
        "using your organisation's PKI instead).",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("init-ca", help="create DIR/ca.pem and DIR/ca.key")
    p.add_argument("dir")
    p.add_argument("--days", type=int, default=365)
    p = sub.add_parser("issue", help="issue DIR/NAME.pem and DIR/NAME.key")
    p.add_argument("dir")
    p.add_argument("names", nargs="+", metavar="NAME")
    p.add_argument("--days", type=int, default=365)
    p.add_argument(
        "--no-local",
        action="store_true",
        help="do not add localhost / 127.0.0.1 to the certificate",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="replace an existing NAME.key / NAME.pem (never through a symlink)",
    )
    args = parser.parse_args(argv)
    if not _importable("cryptography"):  # the certificates are made with it
        _print_install_hint("skdp-certs", "cryptography")
        return 2
    try:
        if args.command == "init-ca":
            print(init_ca(args.dir, days=args.days))
        else:
            for name in args.names:
                cert, key = issue(
                    args.dir,
                    name,
                    days=args.days,
                    local=not args.no_local,
                    overwrite=args.force,
                )
                print(cert, key)
    except (OSError, ValueError) as exc:
        print(f"skdp-certs: error: {exc}", file=sys.stderr)
        return 1
    return 0


def _main():
    """``python -m skdp.vertical.federated {party,server,certs} ...``"""
    if len(sys.argv) < 2 or sys.argv[1] not in ("party", "server", "certs"):
        print("usage: python -m skdp.vertical.federated {party,server,certs} ...")
        return 2
    kind, argv = sys.argv[1], sys.argv[2:]
    if kind == "certs":
        return certs_main(argv)
    return _run(kind, argv, process=True)
