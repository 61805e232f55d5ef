//! report: being written.
