//! Text to [`Spec`], with parse errors located.

use std::path::Path;

use crate::{Format, Spec, SpecError, SpecErrorKind, SpecErrors};

pub(crate) fn parse(text: &str, file: &Path, format: Format) -> Result<Spec, SpecErrors> {
    match format {
        Format::Toml => toml::from_str(text).map_err(|e| {
            SpecError::new(file, 0, 0, SpecErrorKind::Syntax(e.message().to_owned())).into()
        }),
        Format::Json => serde_json::from_str(text).map_err(|e| {
            SpecError::new(
                file,
                e.line(),
                e.column(),
                SpecErrorKind::Syntax(e.to_string()),
            )
            .into()
        }),
    }
}
