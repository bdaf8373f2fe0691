//! Intentionally empty: the journeys live in `tests/`.
