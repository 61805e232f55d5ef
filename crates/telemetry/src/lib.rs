//! telemetry: being written.
