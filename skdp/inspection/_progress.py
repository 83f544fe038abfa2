"""Progress report for long loops (``verbose``): tqdm when installed, else stderr."""

import sys

__all__ = ["Progress"]


class Progress:
    """Counts ``total`` steps of a loop and reports them when ``verbose > 0``.

    With tqdm importable (it is optional) a progress bar is drawn on stderr;
    otherwise a plain line ``"<desc>: done/total"`` is printed to stderr at every
    tenth of the work and at the end. ``verbose=0`` prints nothing.
    """

    def __init__(self, total, desc, verbose=0):
        self.total, self.desc, self.done = int(total), desc, 0
        self._bar, self._enabled, self._next = None, bool(verbose), 0
        if not self._enabled:
            return
        try:
            from tqdm.auto import tqdm
        except ImportError:
            self._step = max(1, self.total // 10)
            self._next = self._step
            print(f"{desc}: 0/{self.total}", file=sys.stderr, flush=True)
        else:
            self._bar = tqdm(total=self.total, desc=desc, file=sys.stderr)

    def update(self, n=1):
        self.done += n
        if not self._enabled:
            return
        if self._bar is not None:
            self._bar.update(n)
        elif self.done >= self._next or self.done == self.total:
            print(f"{self.desc}: {self.done}/{self.total}", file=sys.stderr, flush=True)
            self._next = self.done + self._step

    def close(self):
        if self._bar is not None:
            self._bar.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
