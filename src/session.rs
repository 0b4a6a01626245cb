//! (being implemented)
pub struct Session;
