import sys

from skdp.vertical.federated._cli import _main

sys.exit(_main())
