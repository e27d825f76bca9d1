"""Exceptions and warnings of the data layer."""


class DataContractError(ValueError):
    """A dataset file is missing, malformed or violates its contract (columns, values, rows)."""


class ChecksumMismatchWarning(UserWarning):
    """A supplied dataset's content differs from the reference content (results not comparable)."""


class DataGapWarning(UserWarning):
    """A user dataset's timestamps skip time steps (windows across a gap join times that are not consecutive)."""


class ConstantChannelWarning(UserWarning):
    """A channel is constant over the train rows (std 0): it is standardised with std 1 and carries no signal."""
