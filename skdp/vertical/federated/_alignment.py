"""Record alignment: the parties check they hold the same ids in the same order.

Each party sorts its rows by id (as strings), then, with every other party:

1. both make an ephemeral X25519 key pair and exchange the public keys over their
   authenticated TLS channel (the server never sees these messages);
2. both derive a pairwise key ``k = HKDF-SHA256(X25519 shared secret, info = the
   two names and public keys)``;
3. both send ``HMAC-SHA256(k, n || id_1 || ... || id_n)`` (each id UTF-8 encoded
   and length-prefixed) and compare the peer's value with their own in constant
   time. Any difference, including a different count, refuses the run.

The digest commits to the whole ordered list, so the comparison says only
"same list" or "different list". The key is fresh per run and per pair, so a
digest seen by anyone else (the server, a log) cannot be tested against guessed
id lists. A peer that already holds the same ids learns nothing new; a peer with
a different list learns only that the lists differ (and the other's count).

Private set intersection (finding the common ids of lists that differ) is out of
scope: the parties must agree on the population beforehand.
"""

import hashlib
import hmac
import struct

__all__ = ["AlignmentError", "PairwiseAlignment", "ids_digest"]

STEP = "align"


class AlignmentError(RuntimeError):
    """Two parties do not hold the same ordered record ids."""


def ids_digest(key, ids):
    """``HMAC-SHA256(key, n || len(id) || id || ...)`` of an ordered id list."""
    mac = hmac.new(key, digestmod=hashlib.sha256)
    mac.update(struct.pack(">Q", len(ids)))
    for i in ids:
        raw = i.encode("utf-8")
        mac.update(struct.pack(">I", len(raw)))
        mac.update(raw)
    return mac.digest()


class PairwiseAlignment:
    """One party's side of the alignment with every other party.

    Parameters
    ----------
    name : str
        This party's name.
    peers : list of str
        The other parties.
    ids : list of str
        This party's record ids, in the order its rows are used.

    Messages are ``(receiver, kind, payload)`` triples; the runtime sends them
    with step ``"align"``.
    """

    def __init__(self, name, peers, ids):
        from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

        self.name, self.peers, self.ids = name, sorted(peers), list(ids)
        self._key = X25519PrivateKey.generate()
        self._public = self._key.public_key().public_bytes_raw()
        self._verified = set()
        self._pending = {}  # digests that arrived before the peer's key

    @property
    def done(self):
        return self._verified == set(self.peers)

    def start(self):
        return [(p, "alignment key", {"public": self._public}) for p in self.peers]

    def _pair_key(self, peer, public):
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PublicKey
        from cryptography.hazmat.primitives.kdf.hkdf import HKDF

        shared = self._key.exchange(X25519PublicKey.from_public_bytes(public))
        a, b = sorted([(self.name, self._public), (peer, public)])
        info = b"skdp alignment|" + b"|".join(
            [a[0].encode(), a[1], b[0].encode(), b[1]]
        )
        return HKDF(hashes.SHA256(), 32, salt=None, info=info).derive(shared)

    def receive(self, sender, kind, payload):
        """Handle an alignment message; return the messages to send."""
        if sender not in self.peers:
            raise AlignmentError(f"{self.name}: alignment message from {sender!r}.")
        if kind == "alignment key":
            public = payload.get("public")
            if not isinstance(public, bytes) or len(public) != 32:
                raise AlignmentError(f"{sender} sent a malformed alignment key.")
            key = self._pair_key(sender, public)
            self._pending[sender] = key
            digest = ids_digest(key, self.ids)
            return [(sender, "ids digest", {"digest": digest, "n": len(self.ids)})]
        if kind == "ids digest":
            key = self._pending.get(sender)
            if key is None:
                raise AlignmentError(f"{sender} sent its digest before its key.")
            theirs, n = payload.get("digest"), payload.get("n")
            if not isinstance(theirs, bytes) or not hmac.compare_digest(
                theirs, ids_digest(key, self.ids)
            ):
                detail = (
                    f"{sender} holds {n} records, {self.name} {len(self.ids)}"
                    if n != len(self.ids)
                    else f"both hold {n} records but not the same ids"
                )
                raise AlignmentError(
                    f"record ids differ between {self.name} and {sender} ({detail}); "
                    "the parties must hold the same ids (private set intersection "
                    "is out of scope)."
                )
            self._verified.add(sender)
            return []
        raise AlignmentError(f"unknown alignment message {kind!r} from {sender}.")
