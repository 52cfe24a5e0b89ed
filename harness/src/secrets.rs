//! Secret shapes: what the secrets check finds and what captured output is redacted of.
