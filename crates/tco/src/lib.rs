//! tco: being written.
