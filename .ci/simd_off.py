"""Print NumPy's SIMD dispatch targets that this CPU has (space separated).

CI puts them in NPY_DISABLE_CPU_FEATURES for its varied-arithmetic leg, so that
NumPy runs its baseline kernels only: whatever the CPU, that leg's last bits
differ from the other legs' wherever a kernel choice matters. The names differ
between NumPy versions (AVX2, FMA3, ... in 1.x; X86_V3, X86_V4, ... in 2.x).
"""

try:
    from numpy._core import _multiarray_umath as umath
except ImportError:  # NumPy 1.x
    from numpy.core import _multiarray_umath as umath

print(" ".join(f for f in umath.__cpu_dispatch__ if umath.__cpu_features__.get(f)))
