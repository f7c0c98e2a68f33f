//! Where a command's results go: plain writes through the page cache, and nothing visible in
//! a file until the run has succeeded.
//!
//! [`Output::create`] checks a destination before the work starts (a missing directory, a
//! directory, a file we may not write). A regular file, or one that does not exist yet, is
//! written to a temporary file beside it, renamed over it on [`Output::commit`]; an [`Output`]
//! dropped instead removes it. A replaced file keeps its permissions (and on Unix, where
//! permitted, its owner). Standard output and error, devices (`/dev/null`), named pipes and the
//! descriptors behind `/dev/stdout` or `/dev/fd/N` are written as they go. A symbolic link is
//! written through: its target is replaced, the link stays. A file with other hard links, or in
//! a directory we may not write, is truncated and rewritten on commit, keeping its inode.

use std::ffi::{OsStr, OsString};
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

/// The buffer in front of every output.
const BUFFER: usize = 64 << 10;

/// An output named on the command line: `-` is standard output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Destination {
    Stdout,
    /// Not nameable on the command line but as `/dev/stderr`: where a debug log goes by default.
    Stderr,
    Path(PathBuf),
}

impl From<OsString> for Destination {
    fn from(arg: OsString) -> Self {
        if arg == "-" { Destination::Stdout } else { Destination::Path(PathBuf::from(arg)) }
    }
}

impl Destination {
    /// How messages name this destination.
    pub fn shown(&self) -> String {
        match self {
            Destination::Stdout => "standard output".to_owned(),
            Destination::Stderr => "standard error".to_owned(),
            Destination::Path(path) => path.display().to_string(),
        }
    }
}

/// Why an output could not be written.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {shown}")]
pub struct OutputError {
    /// The destination as the user named it.
    pub shown: String,
    #[source]
    pub source: io::Error,
}

impl OutputError {
    /// The reader went away (`| head`): not a failure to report.
    pub fn is_broken_pipe(&self) -> bool {
        self.source.kind() == io::ErrorKind::BrokenPipe
    }

    /// A failure of the [`Spill`] holding part of `destination`'s output: a full temporary
    /// directory is not the destination's fault, so the message says where it was.
    pub fn in_spill(destination: &Destination, source: io::Error) -> Self {
        let temp = std::env::temp_dir();
        let shown = format!("{} (put together in the temporary directory {})", destination.shown(), temp.display());
        OutputError { shown, source }
    }
}

/// A prepared destination, written through [`Write`] (buffered); see the module's notes.
pub struct Output {
    shown: String,
    /// `None` only once committed or dropped.
    sink: Option<BufWriter<Sink>>,
}

enum Sink {
    /// Written as it goes.
    Direct(Box<dyn Write + Send>),
    /// A temporary file beside `target`, renamed to it on commit.
    Replace { temp: NamedTempFile, target: PathBuf },
    /// A regular file that keeps its inode: truncated and rewritten on commit.
    InPlace { file: File, staged: Spill },
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Sink::Direct(out) => out.write(buf),
            Sink::Replace { temp, .. } => temp.write(buf),
            Sink::InPlace { staged, .. } => staged.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        if let Sink::Direct(out) = self { out.flush() } else { Ok(()) }
    }
}

impl Output {
    /// Prepares `destination`: follows symbolic links, checks what can be checked and opens or
    /// creates what its writing needs. Nothing visible changes but a temporary file.
    pub fn create(destination: &Destination) -> Result<Output, OutputError> {
        let sink = match destination {
            Destination::Stdout => Ok(Sink::Direct(Box::new(io::stdout()))),
            Destination::Stderr => Ok(Sink::Direct(Box::new(io::stderr()))),
            Destination::Path(path) => open(path),
        };
        let shown = destination.shown();
        match sink {
            Ok(sink) => Ok(Output { shown, sink: Some(BufWriter::with_capacity(BUFFER, sink)) }),
            Err(source) => Err(OutputError { shown, source }),
        }
    }

    /// `source`, a failure of this output's writing, as the error that names it.
    pub fn error(&self, source: io::Error) -> OutputError {
        OutputError { shown: self.shown.clone(), source }
    }

    /// Makes what was written visible at the destination: [`commit_all`] of this one.
    pub fn commit(self) -> Result<(), OutputError> {
        commit_all(vec![self])
    }

    /// Appends what `spill` holds. From a spill in a file to a temporary file, the system
    /// copies file to file, without passing the bytes through this process (std's
    /// `io::copy` does where the system can).
    pub fn append(&mut self, spill: &mut Spill) -> io::Result<u64> {
        let writer = self.writer();
        writer.flush()?;
        if let (Sink::Replace { temp, .. }, Some(file)) = (writer.get_mut(), spill.file.as_mut()) {
            file.seek(SeekFrom::Start(0))?;
            return io::copy(file, temp.as_file_mut());
        }
        spill.copy_into(writer)
    }

    fn writer(&mut self) -> &mut BufWriter<Sink> {
        self.sink.as_mut().expect("an output is written only before its commit")
    }

    fn is_direct(&self) -> bool {
        matches!(self.sink.as_ref().map(BufWriter::get_ref), Some(Sink::Direct(_)))
    }

    /// The rename or the rewrite in place, once everything was flushed.
    fn finish(mut self) -> Result<(), OutputError> {
        let Some(writer) = self.sink.take() else { return Ok(()) };
        let result = match writer.into_inner().map_err(io::IntoInnerError::into_error) {
            Ok(Sink::Replace { temp, target }) => {
                let path = temp.path().to_path_buf();
                let persisted = temp.persist(target).map(drop).map_err(|e| e.error);
                forget_temporary(&path);
                persisted
            }
            Ok(Sink::InPlace { mut file, mut staged }) => {
                file.set_len(0).and_then(|()| staged.copy_into(&mut file)).map(drop)
            }
            Ok(Sink::Direct(_)) => Ok(()),
            Err(e) => Err(e),
        };
        result.map_err(|source| self.error(source))
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.writer().write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.writer().flush()
    }
}

impl Drop for Output {
    /// Abandons the output: what is still buffered is discarded, a temporary file removed.
    fn drop(&mut self) {
        if let Some((Sink::Replace { temp, .. }, _)) = self.sink.take().map(BufWriter::into_parts) {
            let path = temp.path().to_path_buf();
            drop(temp);
            forget_temporary(&path);
        }
    }
}

impl std::fmt::Debug for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Output").field("shown", &self.shown).finish_non_exhaustive()
    }
}

/// Commits the fully written outputs of one run: flushes every buffer (those headed for a
/// temporary file first), then renames in order. A failure while flushing leaves every file
/// as it was (and removes the temporaries); a failing rename leaves those before it done.
pub fn commit_all(mut outputs: Vec<Output>) -> Result<(), OutputError> {
    for direct in [false, true] {
        for output in outputs.iter_mut().filter(|output| output.is_direct() == direct) {
            output.flush().map_err(|source| output.error(source))?;
        }
    }
    outputs.into_iter().try_for_each(Output::finish)
}

fn open(path: &Path) -> io::Result<Sink> {
    let path = follow_links(path)?;
    let direct = |file: File| Ok(Sink::Direct(Box::new(file)));
    match descriptor_alias(&path) {
        Some(Some(1)) => return Ok(Sink::Direct(Box::new(io::stdout()))),
        Some(Some(2)) => return Ok(Sink::Direct(Box::new(io::stderr()))),
        // Another descriptor: its alias reaches the same file, pipe or terminal. Behind a
        // regular file, append, so that a shell's `3>>log` keeps what it holds.
        Some(_) => return direct(OpenOptions::new().write(true).append(fs::metadata(&path)?.is_file()).open(&path)?),
        None => {}
    }
    match fs::metadata(&path) {
        Ok(meta) if meta.is_dir() => Err(io::Error::new(io::ErrorKind::IsADirectory, "is a directory")),
        Ok(meta) if meta.is_file() => open_regular(path, &meta),
        // Character and block devices, named pipes: never replaced.
        Ok(_) => direct(OpenOptions::new().write(true).open(&path)?),
        Err(e) if e.kind() == io::ErrorKind::NotFound && path.file_name().is_none() => {
            Err(io::Error::new(io::ErrorKind::InvalidInput, "not a file name"))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Sink::Replace { temp: temp_beside(&path)?, target: path }),
        Err(e) => Err(e),
    }
}

/// An existing regular file: replaced by a rename unless it must keep its inode.
fn open_regular(path: PathBuf, meta: &fs::Metadata) -> io::Result<Sink> {
    // A file we may not write is refused, although its directory would let a rename replace it.
    let file = OpenOptions::new().write(true).open(&path)?;
    if other_links(meta) {
        return Ok(Sink::InPlace { file, staged: Spill::new() });
    }
    match temp_beside(&path) {
        Ok(temp) => keep_looks(temp.as_file(), meta).map(|()| Sink::Replace { temp, target: path }),
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => Ok(Sink::InPlace { file, staged: Spill::new() }),
        Err(e) => Err(e),
    }
}

/// A new file in `target`'s directory, named after it, with the mode a new file gets (not the
/// private one of `tempfile`'s).
fn temp_beside(target: &Path) -> io::Result<NamedTempFile> {
    let dir = target.parent().filter(|dir| !dir.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut prefix = OsString::from(".");
    prefix.push(target.file_name().unwrap_or_default());
    prefix.push(".");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".tmp");
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    // Made and listed under the list's lock, so that an interruption finds every one.
    let mut live = temporaries();
    let temp = builder.tempfile_in(dir)?;
    live.push(temp.path().to_path_buf());
    Ok(temp)
}

/// The temporary files of this process's outputs not yet renamed or removed.
fn temporaries() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    static LIVE: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
    LIVE.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// `temp` was renamed into place or removed.
fn forget_temporary(temp: &Path) {
    temporaries().retain(|live| live != temp);
}

/// Removes every temporary file of this process's outputs, for a run about to end on a
/// signal; no new one is made after this (the list stays locked until the process ends).
pub fn abandon_temporaries() {
    let live = temporaries();
    for temp in live.iter() {
        let _ = fs::remove_file(temp);
    }
    std::mem::forget(live);
}

/// The end of a chain of symbolic links; a dangling link gives the path it names.
fn follow_links(path: &Path) -> io::Result<PathBuf> {
    let mut path = path.to_path_buf();
    for _ in 0..40 {
        // `/dev/stdout` leads to `/proc/self/fd/1`, whose "target" is `pipe:[…]` or the like:
        // stop at the alias and let the system resolve it.
        match fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() && descriptor_alias(&path).is_none() => {
                let target = fs::read_link(&path)?;
                path = match path.parent() {
                    Some(dir) if target.is_relative() => dir.join(target),
                    _ => target,
                };
            }
            _ => return Ok(path),
        }
    }
    Err(io::Error::other("too many levels of symbolic links"))
}

/// For the names under which the system shows a process its open descriptors (`/dev/stdout`,
/// `/dev/stderr`, `/dev/fd/N`, `/proc/self/fd/N`): `Some(Some(N))`, or `Some(None)` when the
/// number is not known from the name alone.
fn descriptor_alias(path: &Path) -> Option<Option<u32>> {
    let number = |name: &OsStr| name.to_str().and_then(|n| n.parse().ok());
    match path.to_str() {
        Some("/dev/stdout") => Some(Some(1)),
        Some("/dev/stderr") => Some(Some(2)),
        _ => ["/dev/fd", "/proc/self/fd", "/proc/thread-self/fd"]
            .iter()
            .any(|dir| path.parent() == Some(Path::new(dir)))
            .then(|| path.file_name().and_then(number)),
    }
}

/// Whether other names share the file's inode (seen on Unix only).
fn other_links(_meta: &fs::Metadata) -> bool {
    #[cfg(unix)]
    return std::os::unix::fs::MetadataExt::nlink(_meta) > 1;
    #[cfg(not(unix))]
    false
}

/// Gives the replacement the replaced file's permissions and, on Unix where the system lets
/// us (as root, or when nothing changes), its owner.
fn keep_looks(file: &File, meta: &fs::Metadata) -> io::Result<()> {
    file.set_permissions(meta.permissions())?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let new = file.metadata()?;
        if (new.uid(), new.gid()) != (meta.uid(), meta.gid()) {
            // Refused to an ordinary user replacing another's file: the new file is theirs.
            match std::os::unix::fs::fchown(file, Some(meta.uid()), Some(meta.gid())) {
                Err(e) if e.kind() != io::ErrorKind::PermissionDenied => return Err(e),
                _ => {}
            }
        }
    }
    Ok(())
}

/// A writer that also takes what a [`Spill`] holds: by copying through this process, or, for
/// an [`Output`] to a file, from file to file within the system.
pub trait SpillTarget: Write {
    fn append(&mut self, spill: &mut Spill) -> io::Result<u64>;

    /// Whether what is written shows nowhere until the caller commits it, and goes when the
    /// caller drops it instead (a temporary file): then a run may write before it knows it
    /// will succeed.
    fn hidden_until_commit(&self) -> bool;
}

impl SpillTarget for Vec<u8> {
    fn append(&mut self, spill: &mut Spill) -> io::Result<u64> {
        spill.copy_into(self)
    }

    /// A buffer is the caller's to read whatever the run's end: never written early.
    fn hidden_until_commit(&self) -> bool {
        false
    }
}

impl SpillTarget for Output {
    fn append(&mut self, spill: &mut Spill) -> io::Result<u64> {
        Output::append(self, spill)
    }

    fn hidden_until_commit(&self) -> bool {
        !self.is_direct()
    }
}

/// Bytes that wait for something to be written before them: in memory up to a limit, then in
/// an unnamed temporary file, which the system removes however the process ends. Where no
/// temporary file can be made, they stay in memory.
#[derive(Debug)]
pub struct Spill {
    memory: Vec<u8>,
    file: Option<File>,
    /// Where the file is made; `None` once it was, or could not be.
    dir: Option<PathBuf>,
    limit: usize,
    len: u64,
}

impl Default for Spill {
    fn default() -> Self {
        Spill::new()
    }
}

impl Spill {
    /// A spill that keeps up to 1 MiB in memory: a small document's routines (the corpus's
    /// largest outputs are under 1 MiB) never reach a file, a large one's hardly add to the
    /// run's peak.
    pub fn new() -> Self {
        Spill::with_limit(1 << 20)
    }

    /// A spill that keeps up to `limit` bytes in memory.
    pub fn with_limit(limit: usize) -> Self {
        Spill { memory: Vec::new(), file: None, dir: Some(std::env::temp_dir()), limit, len: 0 }
    }

    /// The bytes written.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Writes what was written so far into `out`, returning its length. Once it succeeded, the
    /// spill can be written on and copied again.
    pub fn copy_into(&mut self, out: &mut dyn Write) -> io::Result<u64> {
        match &mut self.file {
            Some(file) => {
                file.seek(SeekFrom::Start(0))?;
                io::copy(&mut io::BufReader::with_capacity(BUFFER, file), out)
            }
            None => out.write_all(&self.memory).map(|()| self.len),
        }
    }
}

impl Write for Spill {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.file.is_none()
            && self.memory.len() + buf.len() > self.limit
            && let Some(mut file) = self.dir.take().and_then(|dir| tempfile::tempfile_in(dir).ok())
        {
            file.write_all(&self.memory)?;
            (self.memory, self.file) = (Vec::new(), Some(file));
        }
        let written = match &mut self.file {
            Some(file) => file.write(buf)?,
            None => {
                self.memory.extend_from_slice(buf);
                buf.len()
            }
        };
        self.len += written as u64;
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(path: &Path) -> Destination {
        Destination::Path(path.to_path_buf())
    }

    /// An output of `dir/name` (or of `name` if absolute) that holds `text`, not committed.
    fn written(dir: &Path, name: &str, text: &[u8]) -> Output {
        let mut output = Output::create(&at(&dir.join(name))).unwrap();
        output.write_all(text).unwrap();
        output
    }

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> =
            fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        names.sort();
        names
    }

    #[test]
    fn a_file_is_replaced_on_commit_and_left_as_it_was_when_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let (path, large) = (dir.path().join("out.xaif"), vec![b'x'; 3 * BUFFER]);
        for old in [None, Some("old")] {
            // Dropped past the buffer (some of it is in the temporary already), then committed.
            drop(written(dir.path(), "out.xaif", &large));
            assert_eq!(entries(dir.path()).len(), usize::from(old.is_some()));
            let output = written(dir.path(), "out.xaif", &large);
            assert_eq!(fs::read_to_string(&path).ok().as_deref(), old);
            assert_eq!(entries(dir.path()).len(), 1 + usize::from(old.is_some()), "the temporary beside the target");
            output.commit().unwrap();
            assert!(fs::read(&path).unwrap() == large);
            assert_eq!(entries(dir.path()), ["out.xaif"]);
            fs::write(&path, "old").unwrap();
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn devices_and_standard_output_are_written_as_they_go() {
        written(Path::new("/"), "dev/null", b"discarded").commit().unwrap();
        written(Path::new("/"), "dev/stdout", b"").commit().unwrap();
        Output::create(&Destination::Stdout).unwrap().commit().unwrap();
        let error = written(Path::new("/"), "dev/full", b"lost").commit().unwrap_err();
        assert_eq!((error.to_string().as_str(), error.is_broken_pipe()), ("cannot write /dev/full", false));
        assert!(std::os::unix::fs::FileTypeExt::is_char_device(&fs::metadata("/dev/null").unwrap().file_type()));
        // A descriptor's alias reaches the open file, appended to before the commit.
        let dir = tempfile::tempdir().unwrap();
        let mut held = File::create(dir.path().join("held")).unwrap();
        held.write_all(b"kept").unwrap();
        let number = std::os::fd::AsRawFd::as_raw_fd(&held).to_string();
        let output = written(Path::new("/proc/self/fd"), &number, &vec![b'x'; 2 * BUFFER]);
        assert!(fs::metadata(dir.path().join("held")).unwrap().len() > BUFFER as u64);
        output.commit().unwrap();
        assert!(fs::read(dir.path().join("held")).unwrap() == [&b"kept"[..], &vec![b'x'; 2 * BUFFER]].concat());
        assert_eq!(entries(dir.path()), ["held"]);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_failing_flush_commits_none_of_the_files() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("a.xaif"), "old").unwrap();
        let outputs = ["a.xaif", "/dev/full", "b.json"].map(|name| written(dir.path(), name, b"new"));
        assert_eq!(commit_all(outputs.into()).unwrap_err().shown, "/dev/full");
        assert_eq!(fs::read_to_string(dir.path().join("a.xaif")).unwrap(), "old");
        assert_eq!(entries(dir.path()), ["a.xaif"]);
    }

    #[test]
    fn a_failing_rename_leaves_the_outputs_after_it() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("sub")).unwrap();
        fs::write(dir.path().join("kept.xaif"), "old").unwrap();
        let outputs = ["sub/gone.json", "kept.xaif"].map(|name| written(dir.path(), name, b"new"));
        // The first one's directory goes away, with its temporary, before the commit.
        fs::rename(dir.path().join("sub"), dir.path().join("moved")).unwrap();
        let error = commit_all(outputs.into()).unwrap_err();
        assert!(error.source.kind() == io::ErrorKind::NotFound && error.shown.ends_with("sub/gone.json"), "{error}");
        assert_eq!(fs::read_to_string(dir.path().join("kept.xaif")).unwrap(), "old");
        assert_eq!(entries(dir.path()), ["kept.xaif", "moved"]);
    }

    #[test]
    fn what_cannot_be_written_is_refused_when_created_and_aliases_are_recognised() {
        let dir = tempfile::tempdir().unwrap();
        let error = Output::create(&at(&dir.path().join("missing/x.json"))).unwrap_err();
        assert_eq!(error.source.kind(), io::ErrorKind::NotFound);
        assert!(error.to_string().ends_with("missing/x.json"), "{error}");
        assert!(Output::create(&at(dir.path())).is_err() && Output::create(&at(Path::new(""))).is_err());
        assert_eq!(entries(dir.path()), Vec::<String>::new());
        assert_eq!(descriptor_alias(Path::new("/dev/stdout")), Some(Some(1)));
        assert_eq!(descriptor_alias(Path::new("/dev/fd/7")), Some(Some(7)));
        assert_eq!(descriptor_alias(Path::new("/proc/self/fd/2")), Some(Some(2)));
        assert_eq!(descriptor_alias(Path::new("/dev/null")), None);
        assert_eq!(Destination::from(OsString::from("-")), Destination::Stdout);
    }

    #[test]
    fn a_spill_gives_back_what_it_was_given_over_its_memory() {
        let text: Vec<u8> = (0..100_000).map(|j| (j % 251) as u8).collect();
        let dir = tempfile::tempdir().unwrap();
        // In memory; in a temporary file, unnamed; in memory where no file can be made.
        for (limit, temp, in_file) in
            [(1 << 20, dir.path(), false), (1000, dir.path(), true), (1000, &dir.path().join("no"), false)]
        {
            let mut spill = Spill { dir: Some(temp.to_path_buf()), ..Spill::with_limit(limit) };
            text.chunks(777).for_each(|piece| spill.write_all(piece).unwrap());
            assert_eq!((spill.len(), spill.file.is_some()), (text.len() as u64, in_file));
            for more in [&b""[..], b"more"] {
                spill.write_all(more).unwrap();
                let mut copied = Vec::new();
                assert_eq!(spill.copy_into(&mut copied).unwrap(), copied.len() as u64);
                assert!(copied.len() == text.len() + more.len() && copied.starts_with(&text) && copied.ends_with(more));
            }
            assert_eq!(entries(dir.path()), Vec::<String>::new());
        }
    }

    #[cfg(unix)]
    #[test]
    fn links_modes_and_locked_directories_are_kept() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        let meta = |name: &str| fs::metadata(real.join(name)).unwrap();
        let read = |name: &str| fs::read_to_string(real.join(name)).unwrap();
        let chmod = |path: &Path, mode| fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
        fs::create_dir(&real).unwrap();
        // Symbolic links are written through, dangling ones too; a file keeps its mode, a new
        // one gets a new file's.
        fs::write(real.join("out.xaif"), "old").unwrap();
        fs::write(real.join("plain"), "").unwrap();
        chmod(&real.join("out.xaif"), 0o640);
        symlink("real/out.xaif", dir.path().join("link")).unwrap();
        symlink("made.xaif", real.join("dangling")).unwrap();
        written(dir.path(), "link", b"new").commit().unwrap();
        written(&real, "dangling", b"made").commit().unwrap();
        assert!(fs::symlink_metadata(dir.path().join("link")).unwrap().file_type().is_symlink());
        assert_eq!((read("out.xaif"), read("made.xaif")), ("new".into(), "made".into()));
        assert_eq!((meta("out.xaif").mode() & 0o7777, meta("made.xaif").mode()), (0o640, meta("plain").mode()));
        assert_eq!(entries(&real), ["dangling", "made.xaif", "out.xaif", "plain"]);
        // Hard links all see the new contents, once committed: the file keeps its inode.
        fs::hard_link(real.join("plain"), real.join("other")).unwrap();
        fs::write(real.join("plain"), "old contents, longer than the new").unwrap();
        let inode = meta("plain").ino();
        drop(written(&real, "plain", b"new"));
        assert_eq!(read("other"), "old contents, longer than the new");
        written(&real, "plain", b"new").commit().unwrap();
        assert_eq!((read("other"), meta("plain").ino()), ("new".into(), inode));
        // So does a file in a directory we may not write (unless we are root); a file we may
        // not write is refused.
        chmod(&real, 0o555);
        let enforced = fs::write(real.join("probe"), "").is_err();
        let inode = meta("out.xaif").ino();
        written(&real, "out.xaif", b"newer").commit().unwrap();
        assert_eq!(read("out.xaif"), "newer");
        if enforced {
            assert_eq!(meta("out.xaif").ino(), inode);
            chmod(&real.join("out.xaif"), 0o444);
            let error = Output::create(&at(&real.join("out.xaif"))).unwrap_err();
            assert_eq!(error.source.kind(), io::ErrorKind::PermissionDenied);
        }
        chmod(&real, 0o755);
    }
}
