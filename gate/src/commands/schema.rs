//! `gate schema NAME`: the JSON Schema of a file the gate reads or of an
//! output it writes, generated from the very types that read or write it.
//! The same schemas are committed under `docs/schemas/`, and a test fails
//! when the two differ.

use gate_review::routing::RoutingTable;
use gate_review::rules::model::RawFile;
use schemars::generate::SchemaSettings;

use crate::cli::SchemaName;
use crate::errors::GateError;
use crate::exit;
use crate::output;
use crate::output::json::Document;
use crate::output::lines::Line;
use crate::predicate::Predicate;
use crate::replay::plan::ReplayPlan;
use crate::replay::report::ReplayReport;

/// The schema as text: pretty JSON and a final newline.
pub(crate) fn text(which: SchemaName) -> Result<String, GateError> {
    // Draft 7: what editors' TOML and JSON tooling (taplo among them) reads.
    let generator = SchemaSettings::draft07().into_generator();
    let schema = match which {
        SchemaName::Spec => generator.into_root_schema_for::<gate_specs::Spec>(),
        SchemaName::Routing => generator.into_root_schema_for::<RoutingTable>(),
        SchemaName::Rules => generator.into_root_schema_for::<RawFile>(),
        SchemaName::Verify => generator.into_root_schema_for::<Document<'static>>(),
        SchemaName::Events => generator.into_root_schema_for::<Line<'static>>(),
        SchemaName::Predicate => generator.into_root_schema_for::<Predicate>(),
        SchemaName::Mutants => generator.into_root_schema_for::<gate_mutants::report::Document>(),
        SchemaName::Replay => generator.into_root_schema_for::<ReplayReport>(),
        SchemaName::ReplayPlan => generator.into_root_schema_for::<ReplayPlan>(),
    };
    let mut text = serde_json::to_string_pretty(&schema).map_err(GateError::encode("schema"))?;
    text.push('\n');
    Ok(text)
}

/// `gate schema NAME`: prints it.
pub(crate) fn print(which: SchemaName) -> Result<u8, GateError> {
    output::stdout(&text(which)?).map_err(GateError::stdout)?;
    Ok(exit::PASS)
}

#[cfg(test)]
mod tests {
    use clap::ValueEnum;

    use super::*;

    /// The committed schemas are the code's: a change to a type that reads
    /// or writes a format changes its schema in the same commit.
    #[test]
    fn the_published_schemas_are_the_codes() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/schemas");
        let mut stale = Vec::new();
        // Every name `gate schema` takes, as `scripts/write-schemas.sh` writes it.
        for which in SchemaName::value_variants() {
            let name = which.to_possible_value().unwrap();
            let path = dir.join(format!("{}.schema.json", name.get_name()));
            let committed = std::fs::read_to_string(&path).unwrap_or_default();
            if committed != text(*which).unwrap() {
                stale.push(path.display().to_string());
            }
        }
        assert!(
            stale.is_empty(),
            "stale schemas {stale:?}: regenerate them with scripts/write-schemas.sh"
        );
    }
}
