//! One case per operator and language: a source, the lines that changed,
//! and the mutated lines expected (line, operator, mutated line, set apart).

use std::collections::BTreeSet;

use super::*;

/// The mutants of `source` on `changed` lines, as (line, operator,
/// replacement, status when set apart).
fn mutants(
    lang: Language,
    source: &str,
    changed: &[u32],
) -> Vec<(u32, Operator, String, Option<Status>)> {
    let changed: BTreeSet<u32> = changed.iter().copied().collect();
    generate("f", lang, source, &changed)
        .unwrap()
        .into_iter()
        .map(|m| {
            (
                m.line,
                m.operator,
                m.replacement,
                m.set_apart.map(|s| s.status),
            )
        })
        .collect()
}

fn replacements(lang: Language, source: &str, changed: &[u32]) -> Vec<String> {
    mutants(lang, source, changed)
        .into_iter()
        .filter(|m| m.3.is_none())
        .map(|m| m.2)
        .collect()
}

#[test]
fn python_comparison_boundary_and_constant() {
    let src = "def is_adult(age):\n    return age >= 18\n";
    let got = mutants(Language::Python, src, &[2]);
    assert!(
        got.contains(&(2, Operator::Comparison, "return age > 18".into(), None)),
        "{got:?}"
    );
    assert!(got.contains(&(2, Operator::Constant, "return age >= 19".into(), None)));
    assert!(got.contains(&(2, Operator::Constant, "return age >= 17".into(), None)));
    assert!(got.contains(&(2, Operator::Return, "return None".into(), None)));
}

#[test]
fn python_only_changed_lines_are_mutated() {
    let src = "def old(a):\n    return a > 1\n\ndef new(b):\n    return b == 2\n";
    let got = mutants(Language::Python, src, &[5]);
    assert!(got.iter().all(|m| m.0 == 5), "{got:?}");
    assert!(got.iter().any(|m| m.2 == "return b != 2"), "{got:?}");
    assert!(mutants(Language::Python, src, &[]).is_empty());
}

#[test]
fn python_logic_negation_booleans_arithmetic_and_calls() {
    let src =
        "def f(a, b):\n    log(a)\n    ok = a and not b\n    flag = True\n    return a + b * 2\n";
    let got = replacements(Language::Python, src, &[2, 3, 4, 5]);
    for want in [
        "pass",
        "ok = a or not b",
        "ok = a and b",
        "flag = False",
        "return a - b * 2",
        "return a + b / 2",
        "return None",
    ] {
        assert!(got.contains(&want.to_owned()), "{want} not in {got:?}");
    }
}

#[test]
fn python_equivalent_looking_mutants_are_set_apart() {
    let src = "def f(a):\n    return a + 0\n";
    let got = mutants(Language::Python, src, &[2]);
    assert!(
        got.contains(&(
            2,
            Operator::Arithmetic,
            "return a - 0".into(),
            Some(Status::Equivalent)
        )),
        "{got:?}"
    );
}

#[test]
fn a_mutant_that_does_not_parse_is_unviable() {
    // A deleted call leaves `pass`: the body still parses.
    let src = "def f(a):\n    go(a)\n";
    let got = mutants(Language::Python, src, &[2]);
    assert!(got.iter().all(|m| m.3.is_none()), "{got:?}");
    // In a file that does not parse, no mutant can be shown to.
    let broken = "def f(a):\n    return a >= 18\n  x = (\n";
    let got = mutants(Language::Python, broken, &[2]);
    assert!(got.iter().all(|m| m.3 == Some(Status::Unviable)), "{got:?}");
}

#[test]
fn rust_operators_skip_generics_and_tests() {
    let src = "fn is_adult(age: u32) -> bool {\n    age >= 18\n}\n\
               fn g(v: Vec<u8>) -> usize {\n    if !v.is_empty() && true { v.len() - 1 } else { 0 }\n}\n\
               #[cfg(test)]\nmod tests {\n    fn t() { assert!(1 > 0); }\n}\n";
    let got = replacements(Language::Rust, src, &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    for want in [
        "age > 18",
        "age >= 19",
        "Default::default()",
        "if v.is_empty() && true { v.len() - 1 } else { 0 }",
        "if !v.is_empty() || true { v.len() - 1 } else { 0 }",
        "if !v.is_empty() && false { v.len() - 1 } else { 0 }",
        "if !v.is_empty() && true { v.len() + 1 } else { 0 }",
    ] {
        assert!(got.contains(&want.to_owned()), "{want} not in {got:?}");
    }
    assert!(
        !got.iter().any(|r| r.contains("Vec<=")),
        "a generic's bracket is no comparison: {got:?}"
    );
    assert!(
        !got.iter().any(|r| r.contains("assert!")),
        "tests are not mutated: {got:?}"
    );
}

#[test]
fn rust_integer_suffixes_are_kept_and_calls_deleted() {
    let src = "fn f() -> u32 {\n    log();\n    18u32\n}\n";
    let got = replacements(Language::Rust, src, &[2, 3]);
    assert!(got.contains(&"19u32".to_owned()), "{got:?}");
    assert!(got.contains(&"17u32".to_owned()), "{got:?}");
    assert!(got.contains(&String::new()), "the call deleted: {got:?}");
}

#[test]
fn typescript_operators() {
    let src =
        "export function isAdult(age: number): boolean {\n  return age >= 18 && age !== 0;\n}\n";
    let got = replacements(Language::TypeScript, src, &[2]);
    for want in [
        "return age > 18 && age !== 0;",
        "return age >= 18 || age !== 0;",
        "return age >= 18 && age === 0;",
        "return age >= 19 && age !== 0;",
        "return undefined;",
    ] {
        assert!(got.contains(&want.to_owned()), "{want} not in {got:?}");
    }
}

#[test]
fn javascript_negation_and_calls() {
    let src = "function f(a) {\n  notify(a);\n  return !a;\n}\n";
    let got = replacements(Language::JavaScript, src, &[2, 3]);
    assert!(got.contains(&String::new()), "{got:?}");
    assert!(got.contains(&"return a;".to_owned()), "{got:?}");
}

#[test]
fn go_operators() {
    let src = "package rules\n\nfunc IsAdult(age int) bool {\n\treturn age >= 18 || !false\n}\n";
    let got = replacements(Language::Go, src, &[4]);
    for want in [
        "return age > 18 || !false",
        "return age >= 18 && !false",
        "return age >= 18 || false",
        "return age >= 18 || !true",
        "return age >= 17 || !false",
    ] {
        assert!(got.contains(&want.to_owned()), "{want} not in {got:?}");
    }
}

#[test]
fn integers_move_by_one_in_decimal_only() {
    assert_eq!(moved_by_one("18"), ["19", "17"]);
    assert_eq!(moved_by_one("0"), ["1"]);
    assert_eq!(moved_by_one("7usize"), ["8usize", "6usize"]);
    assert!(moved_by_one("0x1f").is_empty());
    assert!(moved_by_one("1.5").is_empty());
    assert!(moved_by_one("007").is_empty());
}
