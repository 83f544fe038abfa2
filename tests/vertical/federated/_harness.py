"""Test harness: throwaway certificates, data files, configs and processes on
127.0.0.1 with ephemeral ports, every process bounded in time and killed."""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from skdp.vertical.federated._certs import _key_pem, init_ca, issue

ROOT = Path(__file__).resolve().parents[3]


def free_ports(n):
    """``n`` distinct free TCP ports on 127.0.0.1 (bound, read, released)."""
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def make_certs(directory, names):
    init_ca(directory)
    for name in names:
        issue(directory, name)
    return Path(directory)


def write_csv(path, ids, columns):
    """``columns``: ``{name: values}`` written next to an ``id`` column."""
    names = list(columns)
    lines = [",".join(["id", *names])]
    for i, rid in enumerate(ids):
        lines.append(",".join([str(rid)] + [repr(columns[c][i]) for c in names]))
    Path(path).write_text("\n".join(lines) + "\n")
    return Path(path)


def _toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return (
            "{ " + ", ".join(f'"{k}" = {_toml_value(x)}' for k, x in v.items()) + " }"
        )
    return repr(v)


def write_toml(path, table):
    """A small TOML writer: top-level keys, then tables, then arrays of tables."""
    lines = []
    scalars = {k: v for k, v in table.items() if not isinstance(v, dict | list)}
    scalars.update(
        {
            k: v
            for k, v in table.items()
            if isinstance(v, list) and not (v and isinstance(v[0], dict))
        }
    )
    for k, v in scalars.items():
        lines.append(f"{k} = {_toml_value(v)}")
    for k, v in table.items():
        if isinstance(v, dict):
            lines.append(f"\n[{k}]")
            for kk, vv in v.items():
                lines.append(f'"{kk}" = {_toml_value(vv)}')
    for k, v in table.items():
        if isinstance(v, list) and v and isinstance(v[0], dict):
            for entry in v:
                lines.append(f"\n[[{k}]]")
                for kk, vv in entry.items():
                    lines.append(f"{kk} = {_toml_value(vv)}")
    Path(path).write_text("\n".join(lines) + "\n")
    return Path(path)


class Deployment:
    """Configs for a server and K parties, in ``tmp_path``.

    ``blocks[k]``: party k's columns (n x d_k); ``y``: the label party's labels
    (party 0 holds them); ``classes``: the classes both the label party and (for
    more than two) the server declare (default ``[0, 1]``, declared by the label
    party only). Edit ``parties[k]`` / ``server`` dicts before :meth:`write`.
    """

    def __init__(
        self,
        tmp_path,
        blocks,
        y,
        *,
        names=None,
        objective="linear",
        backend="plaintext",
        noise_generation="dealer",
        epsilon=1.0,
        bounds=(-1.0, 1.0),
        label_bounds=(-1.0, 1.0),
        data_norm=None,
        ids=None,
        random_state=0,
        timeouts=None,
        classes=None,
    ):
        self.dir = Path(tmp_path)
        K = len(blocks)
        self.names = names or [f"org-{k}" for k in range(K)]
        self.certs = make_certs(self.dir / "certs", ["server", *self.names])
        ports = free_ports(K + 1)
        self.addresses = {"server": f"127.0.0.1:{ports[0]}"}
        self.addresses.update(
            {n: f"127.0.0.1:{p}" for n, p in zip(self.names, ports[1:])}
        )
        n = len(y)
        ids = (
            [[f"r{i:06d}" for i in range(n)] for _ in range(K)] if ids is None else ids
        )
        timeouts = timeouts or {"startup": 30.0, "call": 60.0, "heartbeat": 0.5}
        self.parties = []
        col = 0
        for k, (name, block) in enumerate(zip(self.names, blocks)):
            feats = [f"x{col + j}" for j in range(block.shape[1])]
            col += block.shape[1]
            columns = {f: block[:, j].tolist() for j, f in enumerate(feats)}
            data = {"path": f"{name}.csv", "id_column": "id", "features": feats}
            if k == 0:
                columns["label"] = np.asarray(y).tolist()
                data["label"] = "label"
                if objective == "linear":
                    data["label_bounds"] = list(label_bounds)
                else:
                    data["classes"] = list(classes or [0, 1])
            # rows shuffled per party: the runtime must sort them by id
            order = np.random.default_rng(k).permutation(n)
            write_csv(
                self.dir / f"{name}.csv",
                [ids[k][i] for i in order],
                {c: [v[i] for i in order] for c, v in columns.items()},
            )
            domain = {}
            if bounds is not None:
                domain["bounds"] = {f: list(bounds) for f in feats}
            if data_norm is not None:
                domain["data_norm"] = data_norm
            self.parties.append(
                {
                    "name": name,
                    "listen": self.addresses[name],
                    "output": f"{name}-out.json",
                    "tls": {
                        "ca_cert": "certs/ca.pem",
                        "cert": f"certs/{name}.pem",
                        "key": f"certs/{name}.key",
                    },
                    "peers": {p: a for p, a in self.addresses.items() if p != name},
                    "data": data,
                    "domain": domain,
                    "policy": {
                        "max_epsilon": 2.0,
                        "backends": ["plaintext", "bfv"],
                        "noise_generation": ["threshold", "distributed", "dealer"],
                        "min_samples": 10,
                    },
                    "timeouts": dict(timeouts),
                }
            )
        self.server = {
            "name": "server",
            "listen": self.addresses["server"],
            "output": "model",
            "tls": {
                "ca_cert": "certs/ca.pem",
                "cert": "certs/server.pem",
                "key": "certs/server.key",
            },
            "model": {
                "objective": objective,
                "epsilon": epsilon,
                "backend": backend,
                "noise_generation": noise_generation,
                "random_state": random_state,
            },
            "timeouts": dict(timeouts),
            "parties": [
                {"name": n, "address": self.addresses[n], "label": k == 0}
                for k, n in enumerate(self.names)
            ],
        }
        if classes is not None and len(classes) > 2:
            self.server["model"]["classes"] = list(classes)

    def write(self):
        paths = {"server": write_toml(self.dir / "server.toml", self.server)}
        for p in self.parties:
            paths[p["name"]] = write_toml(self.dir / f"{p['name']}.toml", p)
        return paths


def env():
    e = dict(os.environ)
    e["PYTHONPATH"] = str(ROOT) + os.pathsep + e.get("PYTHONPATH", "")
    e["GRPC_VERBOSITY"] = "NONE"
    e["OMP_NUM_THREADS"] = e["OPENBLAS_NUM_THREADS"] = "1"
    return e


def launch(configs, module="skdp.vertical.federated", extra_env=None, preexec=None):
    """Start one process per ``{name: config path}``; ``server`` is the server.

    ``preexec``: ``{name: callable}`` run in that child before it starts
    (e.g. to lower its limits with :mod:`resource`)."""
    procs = {}
    e = env() | (extra_env or {})
    for name, path in configs.items():
        kind = "server" if name == "server" else "party"
        procs[name] = subprocess.Popen(
            [sys.executable, "-m", module, kind, "--config", str(path)],
            cwd=ROOT,
            env=e,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=(preexec or {}).get(name),
        )
    return procs


def wait_all(procs, timeout):
    """``{name: (returncode, stdout, stderr)}``; kills everything at the deadline
    and always leaves no process running."""
    deadline = time.monotonic() + timeout
    out = {}
    try:
        for name, proc in procs.items():
            left = max(0.1, deadline - time.monotonic())
            try:
                stdout, stderr = proc.communicate(timeout=left)
            except subprocess.TimeoutExpired:
                proc.kill()
                stdout, stderr = proc.communicate()
                stderr += "\n[killed by the test at its deadline]"
            out[name] = (proc.returncode, stdout, stderr)
    finally:
        kill_all(procs)
    return out


def kill_all(procs):
    for proc in procs.values():
        if proc.poll() is None:
            proc.kill()
    for proc in procs.values():
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover
            pass
    alive = [n for n, p in procs.items() if p.poll() is None]
    assert not alive, f"processes outlived the test: {alive}"


def wait_exits(procs, names, bound, since):
    """Wait for the processes ``names`` to exit, at most until ``since +
    bound`` (a ``time.monotonic()`` origin); ``{name: (returncode, seconds after
    since, stderr)}``, returncode None for a process still running at the bound
    (it is then killed). Polls, so that each exit time is seen when it happens;
    reads the pipes in threads so that no process blocks on a full pipe."""
    import threading

    errs = {n: [] for n in names}
    readers = [
        threading.Thread(
            target=lambda n=n: errs[n].append(procs[n].stderr.read()), daemon=True
        )
        for n in names
    ]
    for t in readers:
        t.start()
    out, left = {}, set(names)
    while left and time.monotonic() < since + bound:
        for n in sorted(left):
            if procs[n].poll() is not None:
                out[n] = [procs[n].returncode, time.monotonic() - since]
                left.discard(n)
        time.sleep(0.05)
    for n in left:
        procs[n].kill()
        out[n] = [None, time.monotonic() - since]
    for n in names:
        procs[n].wait(timeout=10)
    for t in readers:
        t.join(10)
    return {n: (*out[n], "".join(errs[n])) for n in names}


def issue_certificate(directory, file_name, cn, dns=(), days=(-1, 30)):
    """A certificate of the CA in ``directory`` with subject CN ``cn`` and the
    DNS SANs ``dns`` (none: no SAN extension at all), valid from ``days[0]`` to
    ``days[1]`` days from now; written as ``FILE_NAME.pem``/``.key``."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    d = Path(directory)
    ca = x509.load_pem_x509_certificate((d / "ca.pem").read_bytes())
    ca_key = serialization.load_pem_private_key((d / "ca.key").read_bytes(), None)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    usage = [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)]))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now + datetime.timedelta(days=days[0]))
        .not_valid_after(now + datetime.timedelta(days=days[1]))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), True)
        .add_extension(x509.ExtendedKeyUsage(usage), critical=False)
    )
    if dns:
        sans = x509.SubjectAlternativeName([x509.DNSName(n) for n in dns])
        builder = builder.add_extension(sans, critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    (d / f"{file_name}.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (d / f"{file_name}.key").write_bytes(_key_pem(key))
    return d / f"{file_name}.pem", d / f"{file_name}.key"
