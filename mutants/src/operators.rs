//! The mutation operators, applied to a file's syntax tree on its changed
//! lines only.
//!
//! Every operator works on tree-sitter nodes, never on text patterns: a `<`
//! is swapped only where the grammar says it is a comparison (not a Rust
//! generic's bracket), a `1` moved only where it is an integer literal (not
//! part of a name or a string). Each language names the node kinds that
//! hold its binary operators, negations, literals, returns and call
//! statements ([`Grammar`]).

use std::collections::BTreeSet;

use tree_sitter::{Node, Parser, Tree};

use crate::errors::MutantsError;
use crate::language::Language;
use crate::mutant::{Mutant, Operator, SetApart, Status, line_at};

/// The node kinds a language's operators look for.
struct Grammar {
    /// Parents of an operator token that is a binary operator.
    binary: &'static [&'static str],
    /// Negations: the node is replaced by its operand.
    negation: &'static [&'static str],
    /// The boolean literals and what each becomes.
    booleans: &'static [(&'static str, &'static str)],
    /// Integer literal kinds.
    integers: &'static [&'static str],
    /// Return statements, and what a returned value becomes (`None` where
    /// the language has no default for every type).
    returns: Option<(&'static str, &'static str)>,
    /// A statement that is one expression, the call kinds it may hold, and
    /// what a deleted one becomes.
    statement: (&'static str, &'static [&'static str], &'static str),
}

fn grammar(lang: Language) -> Grammar {
    match lang {
        Language::Python => Grammar {
            binary: &["comparison_operator", "boolean_operator", "binary_operator"],
            negation: &["not_operator"],
            booleans: &[("True", "False"), ("False", "True")],
            integers: &["integer"],
            returns: Some(("return_statement", "return None")),
            statement: ("expression_statement", &["call"], "pass"),
        },
        Language::Rust => Grammar {
            binary: &["binary_expression"],
            negation: &["unary_expression"],
            booleans: &[("true", "false"), ("false", "true")],
            integers: &["integer_literal"],
            returns: Some(("return_expression", "return Default::default()")),
            statement: (
                "expression_statement",
                &["call_expression", "macro_invocation"],
                "",
            ),
        },
        Language::TypeScript | Language::JavaScript => Grammar {
            binary: &["binary_expression"],
            negation: &["unary_expression"],
            booleans: &[("true", "false"), ("false", "true")],
            integers: &["number"],
            returns: Some(("return_statement", "return undefined;")),
            statement: ("expression_statement", &["call_expression"], ""),
        },
        Language::Go => Grammar {
            binary: &["binary_expression"],
            negation: &["unary_expression"],
            booleans: &[("true", "false"), ("false", "true")],
            integers: &["int_literal"],
            returns: None,
            statement: ("expression_statement", &["call_expression"], ""),
        },
    }
}

/// What each binary operator token becomes, and the operator it stands for.
fn swaps(token: &str) -> &'static [(&'static str, Operator)] {
    use Operator::{Arithmetic, Comparison, Logical};
    match token {
        ">=" => &[(">", Comparison)],
        ">" => &[(">=", Comparison)],
        "<=" => &[("<", Comparison)],
        "<" => &[("<=", Comparison)],
        "==" => &[("!=", Comparison)],
        "!=" => &[("==", Comparison)],
        "===" => &[("!==", Comparison)],
        "!==" => &[("===", Comparison)],
        "&&" => &[("||", Logical)],
        "||" => &[("&&", Logical)],
        "and" => &[("or", Logical)],
        "or" => &[("and", Logical)],
        "+" => &[("-", Arithmetic)],
        "-" => &[("+", Arithmetic)],
        "*" => &[("/", Arithmetic)],
        "/" | "//" | "%" => &[("*", Arithmetic)],
        _ => &[],
    }
}

/// Every mutant of `source` (the text of `file`, in `lang`) whose edit
/// starts on one of `changed` (1-based lines), in file order. A mutant
/// whose text no longer parses is set apart as unviable; one that looks
/// equivalent to the original, or repeats an earlier one, as equivalent.
pub fn generate(
    file: &str,
    lang: Language,
    source: &str,
    changed: &BTreeSet<u32>,
) -> Result<Vec<Mutant>, MutantsError> {
    let mut parser = Parser::new();
    parser
        .set_language(&lang.grammar())
        .map_err(|e| MutantsError::Grammar {
            language: lang.name(),
            reason: e.to_string(),
        })?;
    let tree = parser
        .parse(source, None)
        .ok_or_else(|| MutantsError::Unparsed {
            file: file.to_owned(),
            language: lang.name(),
        })?;
    let walk = Walk {
        file,
        lang,
        source,
        changed,
        grammar: grammar(lang),
    };
    let mut edits = Vec::new();
    walk.visit(&tree, &mut edits);
    edits.sort_by_key(|e| (e.range.start, e.range.end));
    let mut seen = BTreeSet::new();
    let mut out = Vec::with_capacity(edits.len());
    for edit in edits {
        let mut mutant = walk.mutant(edit);
        let text = mutant.apply(source);
        if !seen.insert(text.clone()) {
            mutant.set_apart.get_or_insert(SetApart {
                status: Status::Equivalent,
                why: "it makes the same code as another mutant".to_owned(),
            });
        } else if mutant.set_apart.is_none() && !parses(&mut parser, &text) {
            mutant.set_apart = Some(SetApart {
                status: Status::Unviable,
                why: "it does not parse".to_owned(),
            });
        }
        out.push(mutant);
    }
    Ok(out)
}

/// Whether `text` parses without an error node.
fn parses(parser: &mut Parser, text: &str) -> bool {
    parser
        .parse(text, None)
        .is_some_and(|t| !t.root_node().has_error())
}

/// One edit found in the tree.
struct Edit {
    range: std::ops::Range<usize>,
    with: String,
    operator: Operator,
    equivalent: Option<&'static str>,
}

/// A walk over one file's tree.
struct Walk<'a> {
    file: &'a str,
    lang: Language,
    source: &'a str,
    changed: &'a BTreeSet<u32>,
    grammar: Grammar,
}

impl Walk<'_> {
    fn visit(&self, tree: &Tree, edits: &mut Vec<Edit>) {
        let mut stack = vec![tree.root_node()];
        while let Some(node) = stack.pop() {
            if self.is_test_code(node) {
                continue;
            }
            self.edits_at(node, edits);
            let mut cursor = node.walk();
            stack.extend(node.children(&mut cursor));
        }
    }

    /// Rust's unit tests live beside the code: a `mod tests` (or any module
    /// under `#[cfg(test)]`) and a `#[test]` function are tests, not code.
    fn is_test_code(&self, node: Node<'_>) -> bool {
        if self.lang != Language::Rust {
            return false;
        }
        if !matches!(node.kind(), "mod_item" | "function_item") {
            return false;
        }
        let named_tests = node.kind() == "mod_item"
            && node
                .child_by_field_name("name")
                .is_some_and(|n| self.text(n) == "tests");
        let attributed = node.prev_named_sibling().is_some_and(|prev| {
            prev.kind() == "attribute_item" && {
                let attr = self.text(prev);
                attr.contains("cfg(test)") || attr == "#[test]" || attr.ends_with("::test]")
            }
        });
        named_tests || attributed
    }

    fn text(&self, node: Node<'_>) -> &str {
        &self.source[node.byte_range()]
    }

    /// Whether a node starts on a changed line.
    fn on_changed(&self, node: Node<'_>) -> bool {
        self.changed.contains(&line_of(node))
    }

    /// Whether every line of a node was changed.
    fn all_changed(&self, node: Node<'_>) -> bool {
        let last = u32::try_from(node.end_position().row).unwrap_or(u32::MAX) + 1;
        (line_of(node)..=last).all(|l| self.changed.contains(&l))
    }

    fn edits_at(&self, node: Node<'_>, edits: &mut Vec<Edit>) {
        if !self.on_changed(node) {
            return;
        }
        let g = &self.grammar;
        let kind = node.kind();
        let parent = node.parent().map(|p| p.kind()).unwrap_or_default();
        let edit = |with: String, operator, equivalent| Edit {
            range: node.byte_range(),
            with,
            operator,
            equivalent,
        };
        if !node.is_named() && g.binary.contains(&parent) {
            for (with, operator) in swaps(kind) {
                edits.push(edit((*with).to_owned(), *operator, self.identity(node)));
            }
        } else if g.negation.contains(&kind) && self.is_negation(node) {
            if let Some(operand) = node
                .child_by_field_name("argument")
                .or_else(|| node.child_by_field_name("operand"))
                .or_else(|| node.named_child(node.named_child_count().saturating_sub(1)))
            {
                edits.push(edit(
                    self.text(operand).to_owned(),
                    Operator::Negation,
                    None,
                ));
            }
        } else if let Some((_, flipped)) = g
            .booleans
            .iter()
            .find(|(b, _)| node.is_named() && is_boolean(kind) && self.text(node) == *b)
        {
            edits.push(edit((*flipped).to_owned(), Operator::Negation, None));
        } else if g.integers.contains(&kind) {
            for with in moved_by_one(self.text(node)) {
                edits.push(edit(with, Operator::Constant, None));
            }
        } else if g.returns.is_some_and(|(k, _)| k == kind) && node.named_child_count() > 0 {
            if let Some((_, default)) = g.returns {
                let current = self.text(node).trim_end_matches(';').trim();
                if current != default.trim_end_matches(';') {
                    edits.push(edit(default.to_owned(), Operator::Return, None));
                }
            }
        } else if kind == g.statement.0
            && node
                .named_child(0)
                .is_some_and(|c| g.statement.1.contains(&c.kind()))
            && self.all_changed(node)
        {
            edits.push(edit(g.statement.2.to_owned(), Operator::Statement, None));
        }
        if self.lang == Language::Rust {
            self.rust_tail(node, edits);
        }
    }

    /// A Rust function's value is its body's last expression: the
    /// returned-value operator replaces it with `Default::default()`.
    fn rust_tail(&self, node: Node<'_>, edits: &mut Vec<Edit>) {
        if node.kind() != "function_item" || node.child_by_field_name("return_type").is_none() {
            return;
        }
        let Some(body) = node.child_by_field_name("body") else {
            return;
        };
        let Some(tail) = body.named_child(body.named_child_count().saturating_sub(1)) else {
            return;
        };
        let statement = tail.kind().ends_with("_statement")
            || tail.kind().ends_with("_item")
            || tail.kind() == "line_comment"
            || tail.kind() == "block_comment";
        if statement || !self.on_changed(tail) || self.text(tail) == "Default::default()" {
            return;
        }
        edits.push(Edit {
            range: tail.byte_range(),
            with: "Default::default()".to_owned(),
            operator: Operator::Return,
            equivalent: None,
        });
    }

    /// A unary node that is a logical negation (`!x`, `not x`), not `-x`.
    fn is_negation(&self, node: Node<'_>) -> bool {
        node.kind() == "not_operator"
            || node
                .child(0)
                .is_some_and(|op| !op.is_named() && self.text(op) == "!")
    }

    /// Why swapping this operator token looks like no change: its right
    /// operand is the operation's identity (`x + 0`, `x * 1`).
    fn identity(&self, token: Node<'_>) -> Option<&'static str> {
        let right = token.next_named_sibling()?;
        match (self.text(token), self.text(right)) {
            ("+" | "-", "0") => Some("adding or subtracting zero is the same"),
            ("*" | "/" | "//", "1") => Some("multiplying or dividing by one is the same"),
            _ => None,
        }
    }

    fn mutant(&self, edit: Edit) -> Mutant {
        let line_start = self.source[..edit.range.start]
            .rfind('\n')
            .map_or(0, |i| i + 1);
        let original = line_at(self.source, edit.range.start).to_owned();
        // The mutated line: the original line with the edit made in it (an
        // edit spanning lines shows its first).
        let line_end = self.source[edit.range.start..]
            .find('\n')
            .map_or(self.source.len(), |i| edit.range.start + i);
        let mut replaced = String::new();
        replaced.push_str(&self.source[line_start..edit.range.start]);
        replaced.push_str(edit.with.lines().next().unwrap_or_default());
        if edit.range.end <= line_end {
            replaced.push_str(&self.source[edit.range.end..line_end]);
        }
        let line = u32::try_from(self.source[..edit.range.start].matches('\n').count())
            .unwrap_or(u32::MAX)
            + 1;
        Mutant {
            file: self.file.to_owned(),
            line,
            operator: edit.operator,
            range: edit.range,
            with: edit.with,
            original,
            replacement: replaced.trim().to_owned(),
            set_apart: edit.equivalent.map(|why| SetApart {
                status: Status::Equivalent,
                why: why.to_owned(),
            }),
        }
    }
}

/// Whether a node kind is a boolean literal in one of the grammars.
fn is_boolean(kind: &str) -> bool {
    matches!(kind, "true" | "false" | "boolean_literal")
}

/// The 1-based line a node starts on.
fn line_of(node: Node<'_>) -> u32 {
    u32::try_from(node.start_position().row).unwrap_or(u32::MAX) + 1
}

/// A decimal integer literal moved up and down by one (its suffix kept,
/// `18u32`→`19u32`); nothing for other forms (hex, floats, huge values).
fn moved_by_one(literal: &str) -> Vec<String> {
    let digits_end = literal
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(literal.len());
    let (digits, suffix) = literal.split_at(digits_end);
    let decimal_suffix = suffix.is_empty()
        || (suffix.starts_with(['u', 'i'])
            && suffix[1..].chars().all(|c| c.is_ascii_alphanumeric()));
    let Ok(n) = digits.parse::<u64>() else {
        return Vec::new();
    };
    if !decimal_suffix || (digits.len() > 1 && digits.starts_with('0')) {
        return Vec::new();
    }
    let mut out = vec![format!("{}{suffix}", n.saturating_add(1))];
    if n > 0 {
        out.push(format!("{}{suffix}", n - 1));
    }
    out
}

#[cfg(test)]
mod tests;
