//! What was learned about one server and model, kept between runs so a one-shot run does not
//! probe again and a refused parameter is refused once: `<cache dir>/servers/<key>.json`, where
//! the cache dir is `$XDG_CACHE_HOME/minicode` (or `~/.cache/minicode`, chosen by the CLI) and
//! the key a hash of the base URL and the model name (the URL itself is not written: it may
//! carry a token). Files are written atomically, 0600 in a 0700 folder.
//!
//! A cache is a convenience, never a source of failure: a missing, unreadable, oversized or
//! corrupt file is ignored (and replaced at the next write), an entry too old is ignored, and a
//! write that fails is only logged.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::provider::compat::Quirks;
use crate::provider::tally::{Count, Tally};

/// How long a probed context window is trusted: a server restarted with another `-c` should
/// be noticed within the hour.
pub(crate) const WINDOW_TTL: Duration = Duration::from_secs(60 * 60);
/// How long learned parameter quirks are trusted: they depend on the server's software,
/// which changes rarely, and relearning one costs a refused request.
pub(crate) const QUIRKS_TTL: Duration = Duration::from_secs(7 * 24 * 60 * 60);
/// The format of the file; another number is ignored like a corrupt file.
const VERSION: u32 = 1;
/// A cache file larger than this is not ours.
const MAX_FILE_BYTES: u64 = 64 * 1024;
/// Entries dated this far in the future (a clock set back) are not trusted.
const FUTURE_SLACK: u64 = 5 * 60;

/// A probed window as cached: `tokens` is `None` when the server could not say (that answer
/// is kept too, so such a server is not asked on every run).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct CachedWindow {
    pub tokens: Option<u64>,
    pub via: Option<String>,
    /// The kind of server the probe recognised (its model profile knobs follow it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<crate::provider::profiles::ServerKind>,
    /// Whether the model takes images, when the server said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<bool>,
    /// Seconds since the Unix epoch.
    pub at: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct CachedQuirks {
    quirks: Quirks,
    at: u64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Entry {
    version: u32,
    /// The hash the file is named after, checked on read.
    key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    window: Option<CachedWindow>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    quirks: Option<CachedQuirks>,
    /// Counted, never expired: the longer the record, the better it describes the model.
    #[serde(default, skip_serializing_if = "Tally::is_empty")]
    tally: Tally,
}

/// The cache entry of one server and model. Without a folder it remembers nothing.
#[derive(Debug, Clone)]
pub struct Cache {
    path: Option<PathBuf>,
    key: String,
}

impl Cache {
    /// The entry for `base_url` + `model` under `dir` (`None`: no cache).
    pub fn new(dir: Option<&Path>, base_url: &str, model: &str) -> Cache {
        let key = key(base_url, model);
        let path = dir.map(|d| d.join("servers").join(format!("{key}.json")));
        Cache { path, key }
    }

    /// The entry of another model on the same server, in the same folder.
    pub(crate) fn for_model(&self, base_url: &str, model: &str) -> Cache {
        let key = key(base_url, model);
        let path = self
            .path
            .as_deref()
            .and_then(Path::parent)
            .map(|d| d.join(format!("{key}.json")));
        Cache { path, key }
    }

    /// The file, when there is a cache.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The cached window, if fresh.
    pub(crate) fn window(&self) -> Option<CachedWindow> {
        self.read()?.window.filter(|w| fresh(w.at, WINDOW_TTL))
    }

    /// The cached quirks, if fresh.
    pub fn quirks(&self) -> Option<Quirks> {
        self.read()?
            .quirks
            .filter(|q| fresh(q.at, QUIRKS_TTL))
            .map(|q| q.quirks)
    }

    pub(crate) fn store_window(
        &self,
        tokens: Option<u64>,
        via: Option<&str>,
        server: Option<crate::provider::profiles::ServerKind>,
        images: Option<bool>,
    ) {
        self.update(|e| {
            e.window = Some(CachedWindow {
                tokens,
                via: via.map(str::to_string),
                server,
                images,
                at: now(),
            });
        });
    }

    /// What this model's runs have counted so far (nothing without a cache).
    pub fn tally(&self) -> Tally {
        self.read().map(|e| e.tally).unwrap_or_default()
    }

    /// Adds one to a counter. Two runs counting at the same moment may lose one count: the
    /// numbers are a guide, not a ledger.
    pub(crate) fn count(&self, what: Count) {
        self.update(|e| e.tally.add(what));
    }

    pub(crate) fn store_quirks(&self, quirks: Quirks) {
        self.update(|e| e.quirks = Some(CachedQuirks { quirks, at: now() }));
    }

    fn read(&self) -> Option<Entry> {
        use std::io::Read;
        let path = self.path.as_ref()?;
        let (file, meta) = crate::fsutil::open_regular(path).ok()?;
        if meta.len() > MAX_FILE_BYTES {
            tracing::debug!(path = %path.display(), "ignoring an oversized server cache file");
            return None;
        }
        let mut bytes = Vec::new();
        file.take(MAX_FILE_BYTES).read_to_end(&mut bytes).ok()?;
        match serde_json::from_slice::<Entry>(&bytes) {
            Ok(e) if e.version == VERSION && e.key == self.key => Some(e),
            Ok(_) => None,
            Err(e) => {
                tracing::debug!(path = %path.display(), error = %e, "ignoring a corrupt server cache file");
                None
            }
        }
    }

    /// Reads the entry (or starts a fresh one), changes it and writes it back atomically.
    fn update(&self, change: impl FnOnce(&mut Entry)) {
        let Some(path) = &self.path else {
            return;
        };
        let mut entry = self.read().unwrap_or_else(|| Entry {
            version: VERSION,
            key: self.key.clone(),
            ..Entry::default()
        });
        change(&mut entry);
        if let Err(e) = write(path, &entry) {
            tracing::debug!(path = %path.display(), error = %e, "could not write the server cache");
        }
    }
}

fn write(path: &Path, entry: &Entry) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    let dir = path
        .parent()
        .ok_or_else(|| std::io::Error::other("cache path has no folder"))?;
    if !dir.is_dir() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
        // The umask may only narrow the mode; an existing folder we just raced keeps its own.
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    let bytes = serde_json::to_vec_pretty(entry).map_err(std::io::Error::other)?;
    crate::fsutil::write_atomic(path, &bytes, Some(0o600))
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn fresh(at: u64, ttl: Duration) -> bool {
    let now = now();
    at <= now + FUTURE_SLACK && now.saturating_sub(at) < ttl.as_secs()
}

/// 16 hex digits of FNV-1a over the base URL (without trailing `/`) and the model name:
/// stable across runs and versions, which `std`'s hasher does not promise.
fn key(base_url: &str, model: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let base = base_url.trim().trim_end_matches('/');
    for byte in base.bytes().chain([0]).chain(model.bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{hash:016x}")
}
