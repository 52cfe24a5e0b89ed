//! Semantic checks of a parsed spec.

use std::path::Path;

use crate::{Format, Spec, SpecErrors};

pub(crate) fn validate(
    spec: &Spec,
    text: &str,
    file: &Path,
    format: Format,
) -> Result<(), SpecErrors> {
    let _ = (spec, text, file, format);
    Ok(())
}
