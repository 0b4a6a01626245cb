//! Doctor's `edits` row: what earlier runs counted for this server and model (edit tiers,
//! failed edits, streamed replies asked again), read from the server cache. Read only.

use super::{Findings, Status};
use crate::provider::openai::OpenAi;

pub(super) fn check(provider: &OpenAi, f: &mut Findings) {
    let tally = provider.tally();
    f.tally = Some(tally);
    if tally.is_empty() {
        f.add("edits", Status::Ok, "none counted yet for this model");
    } else {
        f.add("edits", Status::Ok, tally.describe());
    }
}
