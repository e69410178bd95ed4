"""``tf.debugging``: TF1's assertions and numeric checks (see ``static/_debugging.py``)."""

from rustgrad.static._debugging import (
    Assert,
    assert_equal,
    assert_greater,
    assert_greater_equal,
    assert_less,
    assert_less_equal,
    assert_negative,
    assert_non_negative,
    assert_non_positive,
    assert_none_equal,
    assert_positive,
    assert_rank,
    assert_rank_at_least,
    assert_rank_in,
    assert_shapes,
    assert_type,
    check_numerics,
)

__all__ = [
    "Assert", "assert_equal", "assert_greater", "assert_greater_equal", "assert_less", "assert_less_equal",
    "assert_negative", "assert_non_negative", "assert_non_positive", "assert_none_equal", "assert_positive",
    "assert_rank", "assert_rank_at_least", "assert_rank_in", "assert_shapes", "assert_type", "check_numerics",
]
