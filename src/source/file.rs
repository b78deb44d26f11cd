//! A native file as a byte source (the CLI).

use super::ByteSource;
use crate::error::SourceError;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::Mutex;

pub struct FileSource {
    file: Mutex<File>,
    len: u64,
}

impl FileSource {
    pub fn open(path: &Path) -> std::io::Result<Self> {
        let file = File::open(path)?;
        let len = file.metadata()?.len();
        Ok(FileSource {
            file: Mutex::new(file),
            len,
        })
    }
}

impl FileSource {
    /// Copies `len` bytes at `start` into `out` (between two files the kernel copies:
    /// `copy_file_range`); returns how many were copied (fewer when the file is shorter).
    pub fn copy_to(&self, start: u64, len: u64, out: &mut File) -> std::io::Result<u64> {
        let file = self.file.lock().map_err(|_| std::io::Error::other("the file handle is poisoned"))?;
        let mut f: &File = &file;
        f.seek(SeekFrom::Start(start))?;
        std::io::copy(&mut f.take(len), out)
    }
}

impl ByteSource for FileSource {
    fn len(&self) -> u64 {
        self.len
    }

    async fn read_at(&self, start: u64, len: u64) -> Result<Vec<u8>, SourceError> {
        let mut buf = Vec::new();
        self.read_into(start, len, &mut buf).await?;
        Ok(buf)
    }

    async fn read_into(&self, start: u64, len: u64, buf: &mut Vec<u8>) -> Result<(), SourceError> {
        let n = usize::try_from(len)
            .map_err(|_| SourceError::new(format!("a read of {len} bytes does not fit in memory")))?;
        let mut file = self
            .file
            .lock()
            .map_err(|_| SourceError::new("the file handle is poisoned"))?;
        file.seek(SeekFrom::Start(start))
            .map_err(|e| SourceError::new(format!("seek to {start}: {e}")))?;
        buf.resize(n, 0);
        file.read_exact(buf)
            .map_err(|e| SourceError::new(format!("read of {len} bytes at {start}: {e}")))?;
        Ok(())
    }
}
