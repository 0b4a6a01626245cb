//! (being implemented)
