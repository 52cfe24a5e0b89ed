//! Readiness probes for service checks.
