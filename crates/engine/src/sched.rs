//! Schedules: intended send times for open loop.
