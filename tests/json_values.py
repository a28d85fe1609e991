"""Hypothesis strategies for JSON documents: the values a user's JSON configuration can hold
(shared by the tests of the JSON writers: PizzaPi's merge, the splice)."""

from __future__ import annotations

from hypothesis import strategies as st

#: A JSON scalar: null, a boolean, a number (no NaN or infinity), a short string.
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(10**12), 10**12)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6)
)
#: Any JSON value, nested a little.
VALUES = st.recursive(
    SCALARS,
    lambda kids: (
        st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=5), kids, max_size=3)
    ),
    max_leaves=10,
)
