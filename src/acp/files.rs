//! The editor's file access: `fs/read_text_file` and `fs/write_text_file` requests to the
//! client, for a session whose client offered them. The CLI plugs this (a
//! `protocol::EditorFiles`) into the tools' `FileAccess`; paths arrive already confined to the
//! workspace. Nothing here touches the disk.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use agent_client_protocol::v1::schema::{ReadTextFileRequest, WriteTextFileRequest};
use futures_util::future::BoxFuture;

use super::Connection;

/// Reads and writes files through the client, in the name of one session.
#[derive(Clone)]
pub(crate) struct ClientFiles {
    cx: Connection,
    /// Set once the session has its id (before any prompt can reach a tool).
    session: Arc<OnceLock<String>>,
}

impl std::fmt::Debug for ClientFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientFiles")
            .field("session", &self.session.get())
            .finish_non_exhaustive()
    }
}

impl ClientFiles {
    pub(super) fn new(cx: Connection) -> Self {
        Self {
            cx,
            session: Arc::new(OnceLock::new()),
        }
    }

    pub(super) fn bind(&self, session_id: &str) {
        let _ = self.session.set(session_id.to_string());
    }

    fn session(&self) -> Result<String, String> {
        self.session
            .get()
            .cloned()
            .ok_or_else(|| "the session is not set up yet".to_string())
    }

    /// The whole text of the file as the editor has it (unsaved changes included).
    pub(super) async fn read(&self, path: &Path) -> Result<String, String> {
        let request = ReadTextFileRequest::new(self.session()?, path.to_path_buf());
        match self.cx.send_request(request).block_task().await {
            Ok(answer) => Ok(answer.content),
            Err(e) => Err(format!("the editor could not read it: {e}")),
        }
    }

    /// Replaces the file's text in the editor (which saves it and keeps its own undo).
    pub(super) async fn write(&self, path: &Path, content: &str) -> Result<(), String> {
        let request =
            WriteTextFileRequest::new(self.session()?, path.to_path_buf(), content.to_string());
        match self.cx.send_request(request).block_task().await {
            Ok(_) => Ok(()),
            Err(e) => Err(format!("the editor could not write it: {e}")),
        }
    }
}

impl crate::protocol::EditorFiles for ClientFiles {
    fn read_text<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(self.read(path))
    }

    fn write_text<'a>(
        &'a self,
        path: &'a Path,
        content: &'a str,
    ) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(self.write(path, content))
    }
}
