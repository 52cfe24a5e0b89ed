//! A pre-registered target: a figure of the candidate's replay, a
//! comparison and a value, fixed before the replay runs and judged after.

use std::fmt;

use gate_scorecard::replays::Side;

/// A figure a target names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Figure {
    /// The candidate's recall.
    Recall,
    /// The candidate's noise.
    Noise,
    /// The candidate's cost in US dollars.
    CostUsd,
    /// The candidate's findings per run.
    FindingsPerRun,
    /// The candidate's recall minus the baseline's.
    RecallGain,
    /// The candidate's noise minus the baseline's.
    NoiseChange,
    /// The candidate's cost over the baseline's.
    CostRatio,
}

const FIGURES: &[(&str, Figure)] = &[
    ("recall", Figure::Recall),
    ("noise", Figure::Noise),
    ("cost_usd", Figure::CostUsd),
    ("findings_per_run", Figure::FindingsPerRun),
    ("recall_gain", Figure::RecallGain),
    ("noise_change", Figure::NoiseChange),
    ("cost_ratio", Figure::CostRatio),
];

/// A target: `recall >= 0.8`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Target {
    /// What is measured.
    pub figure: Figure,
    /// `>=`, `<=`, `>` or `<`.
    pub op: &'static str,
    /// The bound.
    pub value: f64,
}

/// A target that does not parse.
#[derive(Debug, thiserror::Error)]
#[error("target {text:?}: {why}")]
pub struct TargetError {
    /// As written.
    pub text: String,
    /// What is wrong.
    pub why: String,
}

impl Target {
    /// Parses `FIGURE OP VALUE` (spaces optional).
    pub fn parse(text: &str) -> Result<Self, TargetError> {
        let err = |why: String| TargetError {
            text: text.to_owned(),
            why,
        };
        let (at, op) = [">=", "<=", ">", "<"]
            .iter()
            .find_map(|op| text.find(op).map(|i| (i, *op)))
            .ok_or_else(|| err("no comparison: use >=, <=, > or <".to_owned()))?;
        let name = text[..at].trim();
        let figure = FIGURES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, f)| *f)
            .ok_or_else(|| {
                let known: Vec<&str> = FIGURES.iter().map(|(n, _)| *n).collect();
                err(format!(
                    "unknown figure {name:?}: one of {}",
                    known.join(", ")
                ))
            })?;
        let value: f64 = text[at + op.len()..]
            .trim()
            .parse()
            .map_err(|_| err("the value is not a number".to_owned()))?;
        if !value.is_finite() {
            return Err(err("the value is not a finite number".to_owned()));
        }
        Ok(Self { figure, op, value })
    }

    /// The figure measured, when there is one to measure.
    pub fn measure(&self, baseline: &Side, candidate: &Side) -> Option<f64> {
        match self.figure {
            Figure::Recall => candidate.recall.rate,
            Figure::Noise => candidate.noise.rate,
            Figure::CostUsd => Some(candidate.cost_usd),
            Figure::FindingsPerRun => candidate.findings_per_run,
            Figure::RecallGain => Some(candidate.recall.rate? - baseline.recall.rate?),
            Figure::NoiseChange => Some(candidate.noise.rate? - baseline.noise.rate?),
            Figure::CostRatio => {
                (baseline.cost_usd > 0.0).then(|| candidate.cost_usd / baseline.cost_usd)
            }
        }
    }

    /// Whether `value` meets the target.
    pub fn holds(&self, value: f64) -> bool {
        match self.op {
            ">=" => value >= self.value,
            "<=" => value <= self.value,
            ">" => value > self.value,
            _ => value < self.value,
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = FIGURES
            .iter()
            .find(|(_, fig)| *fig == self.figure)
            .map_or("?", |(n, _)| *n);
        write!(f, "{name} {} {}", self.op, self.value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_with_or_without_spaces_and_refuse_the_rest() {
        let t = Target::parse("recall>=0.8").unwrap();
        assert_eq!((t.figure, t.op, t.value), (Figure::Recall, ">=", 0.8));
        assert_eq!(t.to_string(), "recall >= 0.8");
        let t = Target::parse(" cost_ratio <= 0.5 ").unwrap();
        assert_eq!((t.figure, t.op), (Figure::CostRatio, "<="));
        assert!(t.holds(0.5) && !t.holds(0.51));
        for bad in ["recall", "precision >= 1", "recall >= x", "recall >= inf"] {
            assert!(Target::parse(bad).is_err(), "{bad}");
        }
    }
}
