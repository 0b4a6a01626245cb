//! Bounded collection of a command's output for the model (head and tail kept, secrets redacted
//! across the cuts), with the full text saved to a file once it passes the cap.

use std::path::{Path, PathBuf};

use crate::tools::{Secrets, ToolCtx, outputs};

/// Collects output with bounded memory: the first half of the cap, a ring of the last half,
/// and — once the total passes the cap — the whole stream saved to a file as it comes
/// (redacted, and itself capped: see [`outputs`]). Each half keeps a margin of the longest
/// secret's length beyond its cut, so a secret across a cut is seen whole and redacted rather
/// than half shown.
pub(crate) struct Sink<'a> {
    /// Bytes of output the model gets: `head_cap` from the start, the rest from the end.
    cap: usize,
    head_cap: usize,
    margin: usize,
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    total: u64,
    secrets: &'a Secrets,
    /// The workspace, under whose `.minicode/outputs` the full output is kept.
    workspace: PathBuf,
    limits: outputs::Limits,
    log: Option<Result<outputs::Saved<'a>, String>>,
    notes: String,
}

impl<'a> Sink<'a> {
    pub(crate) fn new(ctx: &'a ToolCtx, cap: usize) -> Self {
        Self {
            cap,
            head_cap: cap / 2,
            margin: ctx.secrets.longest(),
            head: Vec::new(),
            tail: std::collections::VecDeque::new(),
            total: 0,
            secrets: &ctx.secrets,
            workspace: ctx.workspace.clone(),
            limits: ctx.outputs,
            log: None,
            notes: String::new(),
        }
    }

    pub(crate) fn push(&mut self, mut data: &[u8]) {
        self.total += data.len() as u64;
        if self.total > self.cap as u64 && self.log.is_none() {
            // First time over the cap: everything so far is still in head + tail (together
            // they hold more than the cap), so the saved file starts complete.
            self.log = Some(self.open_log());
        }
        if let Some(Ok(saved)) = &mut self.log {
            saved.write(data);
        }
        let head_keep = self.head_cap + self.margin;
        let tail_keep = self.cap - self.head_cap + self.margin;
        let room = head_keep.saturating_sub(self.head.len()).min(data.len());
        self.head.extend_from_slice(&data[..room]);
        data = &data[room..];
        if data.len() >= tail_keep {
            self.tail.clear();
            self.tail.extend(&data[data.len() - tail_keep..]);
        } else {
            let overflow = (self.tail.len() + data.len()).saturating_sub(tail_keep);
            self.tail.drain(..overflow);
            self.tail.extend(data);
        }
    }

    fn open_log(&self) -> Result<outputs::Saved<'a>, String> {
        let mut saved =
            outputs::Saved::create(&self.workspace, self.secrets, self.limits.max_file_bytes)?;
        let (a, b) = self.tail.as_slices();
        for part in [&self.head[..], a, b] {
            saved.write(part);
        }
        Ok(saved)
    }

    /// A note from us (not the command), shown after the output.
    pub(super) fn note(&mut self, text: &str) {
        self.notes.push_str(text);
    }

    /// The text for the model: everything, or head + marker + tail when over the cap, with
    /// secrets redacted after the cuts were moved off them.
    pub(crate) fn finish(self, workspace: &Path) -> String {
        let tail: Vec<u8> = self.tail.into();
        let head = self.head;
        let tail_cap = self.cap - self.head_cap;
        let secrets = self.secrets;
        let text =
            |bytes: &[u8]| String::from_utf8_lossy(&secrets.redact_bytes(bytes)).into_owned();
        let retained_all = self.total == (head.len() + tail.len()) as u64;
        let all;
        let (first, last, cut) = if self.total <= self.cap as u64 {
            (&head[..], &tail[..], 0)
        } else if retained_all {
            all = [head.as_slice(), tail.as_slice()].concat();
            let end = secrets.head_cut(&all, self.head_cap);
            let start = secrets.tail_cut(&all, all.len() - tail_cap).max(end);
            (&all[..end], &all[start..], (start - end) as u64)
        } else {
            let end = secrets.head_cut(&head, self.head_cap);
            let start = secrets.tail_cut(&tail, tail.len().saturating_sub(tail_cap));
            let cut = self.total - (end + tail.len() - start) as u64;
            (&head[..end], &tail[start..], cut)
        };
        let saved = match self.log {
            Some(Ok(saved)) => {
                let (path, note) = saved.finish(workspace);
                outputs::prune(&self.workspace, &self.limits, Some(&path));
                note
            }
            Some(Err(e)) => format!("full output not saved: {e}"),
            None => "full output not saved".to_string(),
        };
        let mut out = text(first);
        // (Over the cap by less than two secrets' length, nothing may be cut at all.)
        if cut > 0 {
            if !out.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(&format!("[... {cut} bytes cut; {saved} ...]\n"));
        }
        out.push_str(&text(last));
        out.push_str(&self.notes);
        out
    }
}
