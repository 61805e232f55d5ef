//! Validity checks every result gets (filled in by the runner).
