//! The per-task unit-test report precondition.
