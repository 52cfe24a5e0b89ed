//! `gate keys generate | show`.

use std::fmt::Write;

use gate_evidence::PublicKey;
use gate_evidence::keys::PUBLIC_KEY_FILE;

use crate::attest;
use crate::config::Context;
use crate::errors::GateError;
use crate::exit;
use crate::output;

/// `gate keys generate`.
pub(crate) fn generate(ctx: &Context) -> Result<u8, GateError> {
    let (key, paths) = attest::generate_keys(ctx)?;
    let mut out = String::new();
    let _ = writeln!(out, "private key: {} (mode 0600)", paths.private.display());
    let _ = writeln!(out, "public key:  {}", paths.public.display());
    let _ = writeln!(out, "key id:      {}", key.keyid());
    output::stdout(&out).map_err(GateError::stdout)?;
    Ok(exit::PASS)
}

/// `gate keys show`: the key in effect (`GATE_SIGNING_KEY`, else the state
/// directory's).
pub(crate) fn show(ctx: &Context) -> Result<u8, GateError> {
    let public = if let Some(value) = ctx.env.signing_key() {
        gate_evidence::SigningKey::from_pem_or_path(&value)?
            .public_key()
            .clone()
    } else {
        let path = attest::keys_dir(ctx).join(PUBLIC_KEY_FILE);
        if !path.exists() {
            return Err(GateError::Usage(format!(
                "no key at {}: create one with `gate keys generate`",
                path.display()
            )));
        }
        PublicKey::load(&path)?
    };
    let mut out = String::new();
    let _ = writeln!(out, "key id:     {}", public.keyid());
    let _ = writeln!(out, "public key: {}", public.to_hex());
    output::stdout(&out).map_err(GateError::stdout)?;
    Ok(exit::PASS)
}
