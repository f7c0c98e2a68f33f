//! Where a command's results go: plain writes through the page cache, and nothing visible
//! until a run has succeeded.
//!
//! [`Output::create`] checks a destination before the work starts (a missing directory, a
//! directory named as a file, a file we may not write are found then). A regular file, or one
//! that does not exist yet, is written to a temporary file beside it, which [`Output::commit`]
//! renames over it; dropping an [`Output`] instead removes the temporary, so a failed run
//! leaves nothing behind. A replaced file keeps its permissions (and, on Unix, where
//! permitted, its owner). Everything else is written as it goes: standard output and error,
//! devices such as `/dev/null`, named pipes, the descriptors behind `/dev/stdout` or
//! `/dev/fd/N`. A symbolic link is written through (its target is replaced, the link stays);
//! a file with other hard links, or in a directory we may not write, is truncated and
//! rewritten on commit, so that every name sees the new contents.
//!
//! [`Spill`] holds what must wait for something written before it (a streamed document's
//! routines, done before its head is known): in memory, then in an unnamed temporary file.

use std::ffi::{OsStr, OsString};
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

/// The buffer in front of every output.
const BUFFER: usize = 64 << 10;

/// What a [`Spill`] holds in memory before it moves to a temporary file.
const SPILL_MEMORY: usize = 8 << 20;

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

    /// A failure of a [`Spill`] holding part of `destination`'s output: a full temporary
    /// directory is not the destination's fault, so the message says where it was.
    pub fn in_spill(destination: &Destination, source: io::Error) -> Self {
        let dir = std::env::temp_dir();
        OutputError { shown: format!("{} (put together in the temporary directory {})", destination.shown(), dir.display()), source }
    }
}

/// A prepared destination, written through [`Write`]; see the module's notes.
#[derive(Debug)]
pub struct Output {
    shown: String,
    /// `None` only once committed or dropped.
    sink: Option<BufWriter<Sink>>,
}

#[derive(Debug)]
enum Sink {
    Stdout(io::Stdout),
    Stderr(io::Stderr),
    /// Devices, pipes, descriptor aliases: written as they are.
    Direct(File),
    /// A regular file or a new one: a temporary beside it, renamed to `target` on commit.
    Replace { temp: NamedTempFile, target: PathBuf },
    /// A regular file that must keep its inode: truncated and rewritten on commit.
    InPlace { file: File, staged: Spill },
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Sink::Stdout(out) => out.write(buf),
            Sink::Stderr(out) => out.write(buf),
            Sink::Direct(file) => file.write(buf),
            Sink::Replace { temp, .. } => temp.write(buf),
            Sink::InPlace { staged, .. } => staged.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Sink::Stdout(out) => out.flush(),
            Sink::Stderr(out) => out.flush(),
            Sink::Direct(file) => file.flush(),
            Sink::Replace { .. } | Sink::InPlace { .. } => Ok(()),
        }
    }
}

impl Output {
    /// Prepares `destination`: resolves symbolic links, checks what can be checked and opens
    /// or creates what its writing needs. Nothing visible changes but a temporary file.
    pub fn create(destination: &Destination) -> Result<Output, OutputError> {
        let sink = match destination {
            Destination::Stdout => Ok(Sink::Stdout(io::stdout())),
            Destination::Stderr => Ok(Sink::Stderr(io::stderr())),
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

    /// Makes what was written visible at the destination ([`commit_all`] of this one).
    pub fn commit(self) -> Result<(), OutputError> {
        commit_all(vec![self])
    }

    fn writer(&mut self) -> &mut BufWriter<Sink> {
        self.sink.as_mut().expect("an output is used only before its commit")
    }

    /// Whether what is written reaches the destination before the commit.
    fn is_direct(&self) -> bool {
        matches!(self.sink.as_ref().map(BufWriter::get_ref), Some(Sink::Stdout(_) | Sink::Stderr(_) | Sink::Direct(_)))
    }

    /// The rename (or in-place rewrite) after everything was flushed.
    fn finish(mut self) -> Result<(), OutputError> {
        let Some(writer) = self.sink.take() else { return Ok(()) };
        let result = match writer.into_inner().map_err(io::IntoInnerError::into_error) {
            Ok(Sink::Replace { temp, target }) => temp.persist(target).map(drop).map_err(|e| e.error),
            Ok(Sink::InPlace { mut file, mut staged }) => {
                file.set_len(0).and_then(|()| staged.copy_into(&mut file)).and_then(|_| file.flush())
            }
            Ok(_) => Ok(()),
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
        if let Some(writer) = self.sink.take() {
            drop(writer.into_parts());
        }
    }
}

/// Commits the outputs of one run, fully written: first every buffer is flushed (those headed
/// for temporary files before those written as they go), then the temporaries are renamed in
/// order. A failure while flushing leaves every replaced file as it was, and the temporaries
/// not committed are removed; a failing rename leaves the renames before it done.
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
    if let Some(number) = descriptor_alias(&path) {
        return Ok(match number {
            Some(1) => Sink::Stdout(io::stdout()),
            Some(2) => Sink::Stderr(io::stderr()),
            // Another descriptor: its alias reaches the same file, pipe or terminal. Behind a
            // regular file, append, so a shell's `3>>log` keeps what it holds.
            _ => {
                let regular = fs::metadata(&path)?.is_file();
                Sink::Direct(OpenOptions::new().write(true).append(regular).open(&path)?)
            }
        });
    }
    match fs::metadata(&path) {
        Ok(meta) if meta.is_dir() => Err(io::Error::new(io::ErrorKind::IsADirectory, "is a directory")),
        Ok(meta) if meta.is_file() => open_regular(path, &meta),
        // Character and block devices, named pipes: never replaced.
        Ok(_) => Ok(Sink::Direct(OpenOptions::new().write(true).open(&path)?)),
        Err(e) if e.kind() == io::ErrorKind::NotFound && path.file_name().is_none() => {
            Err(io::Error::new(io::ErrorKind::InvalidInput, "not a file name"))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Sink::Replace { temp: temp_beside(&path)?, target: path }),
        Err(e) => Err(e),
    }
}

/// An existing regular file: replaced by a rename unless it must keep its inode.
fn open_regular(path: PathBuf, meta: &fs::Metadata) -> io::Result<Sink> {
    // A file we may not write is refused, though its directory would let a rename replace it.
    let file = OpenOptions::new().write(true).open(&path)?;
    let in_place = |file| Sink::InPlace { file, staged: Spill::new() };
    if other_links(meta) {
        return Ok(in_place(file));
    }
    match temp_beside(&path) {
        Ok(temp) => {
            keep_looks(temp.as_file(), meta)?;
            Ok(Sink::Replace { temp, target: path })
        }
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => Ok(in_place(file)),
        Err(e) => Err(e),
    }
}

/// A new, empty file in `target`'s directory, named after it, with the default mode of new
/// files (`tempfile` would make it private).
fn temp_beside(target: &Path) -> io::Result<NamedTempFile> {
    let dir = match target.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let mut prefix = OsString::from(".");
    prefix.push(target.file_name().unwrap_or_default());
    prefix.push(".");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".tmp");
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    builder.tempfile_in(dir)
}

/// The end of a chain of symbolic links (the path itself if it is none); a dangling link gives
/// the path it names, which will be created.
fn follow_links(path: &Path) -> io::Result<PathBuf> {
    let mut path = path.to_path_buf();
    for _ in 0..40 {
        // `/dev/stdout` leads to `/proc/self/fd/1`, whose "target" is `pipe:[…]` or the like:
        // stop at the alias and let the system resolve it.
        if descriptor_alias(&path).is_some() {
            return Ok(path);
        }
        match fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => {
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
    let number = |name: &OsStr| name.to_str().and_then(|n| n.parse::<u32>().ok());
    match path.to_str() {
        Some("/dev/stdout") => return Some(Some(1)),
        Some("/dev/stderr") => return Some(Some(2)),
        _ => {}
    }
    ["/dev/fd", "/proc/self/fd", "/proc/thread-self/fd"]
        .iter()
        .any(|dir| path.parent() == Some(Path::new(dir)))
        .then(|| path.file_name().and_then(number))
}

/// Whether other names share the file's inode (Unix only: elsewhere, none are seen).
#[cfg(unix)]
fn other_links(meta: &fs::Metadata) -> bool {
    std::os::unix::fs::MetadataExt::nlink(meta) > 1
}

#[cfg(not(unix))]
fn other_links(_meta: &fs::Metadata) -> bool {
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

/// Bytes that wait for something written before them: in memory up to a limit, then in an
/// unnamed temporary file (which the system removes however the process ends). Where no
/// temporary file can be made, they stay in memory.
#[derive(Debug)]
pub struct Spill {
    memory: Vec<u8>,
    file: Option<File>,
    /// Where the file goes; `None` once it was made or could not be.
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
    /// A spill that keeps up to 8 MiB in memory.
    pub fn new() -> Self {
        Spill::with_limit(SPILL_MEMORY)
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

    /// Writes everything written so far into `out` (which may be done again); returns its length.
    pub fn copy_into(&mut self, out: &mut dyn Write) -> io::Result<u64> {
        match &mut self.file {
            // Reading to the end leaves the file where the next write appends.
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
        if self.file.is_none() && self.memory.len() + buf.len() > self.limit {
            if let Some(mut file) = self.dir.take().and_then(|dir| tempfile::tempfile_in(dir).ok()) {
                file.write_all(&self.memory)?;
                self.memory = Vec::new();
                self.file = Some(file);
            }
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

    fn write(destination: &Destination, text: &str) -> Result<(), OutputError> {
        let mut output = Output::create(destination)?;
        output.write_all(text.as_bytes()).map_err(|e| output.error(e))?;
        output.commit()
    }

    fn at(path: &Path) -> Destination {
        Destination::Path(path.to_path_buf())
    }

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> =
            fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        names
    }

    #[test]
    fn a_file_is_replaced_on_commit_and_only_then() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.xaif");
        for old in [None, Some("old")] {
            if let Some(old) = old {
                fs::write(&path, old).unwrap();
            }
            let mut output = Output::create(&at(&path)).unwrap();
            // Past the buffer: some of it is in the temporary already.
            output.write_all(&vec![b'x'; 3 * BUFFER]).unwrap();
            assert_eq!(fs::read_to_string(&path).ok().as_deref(), old);
            assert_eq!(entries(dir.path()).len(), 2, "the temporary beside the target");
            output.commit().unwrap();
            assert_eq!(fs::read(&path).unwrap(), vec![b'x'; 3 * BUFFER]);
            assert_eq!(entries(dir.path()), ["out.xaif"]);
        }
    }

    #[test]
    fn an_abandoned_output_leaves_nothing_and_keeps_the_old_file() {
        let dir = tempfile::tempdir().unwrap();
        let (old, new) = (dir.path().join("old.xaif"), dir.path().join("new.xaif"));
        fs::write(&old, "old").unwrap();
        for path in [&old, &new] {
            let mut output = Output::create(&at(path)).unwrap();
            output.write_all(&vec![b'x'; 3 * BUFFER]).unwrap();
            drop(output);
        }
        assert_eq!(fs::read_to_string(&old).unwrap(), "old");
        assert_eq!(entries(dir.path()), ["old.xaif"]);
    }

    #[test]
    fn a_device_is_written_as_it_is() {
        let null = Path::new("/dev/null");
        if null.exists() {
            let kind = fs::metadata(null).unwrap().file_type();
            write(&at(null), "discarded").unwrap();
            assert_eq!(fs::metadata(null).unwrap().file_type(), kind);
        }
        // A failing device fails at the latest when committed, naming it.
        let full = Path::new("/dev/full");
        if full.exists() {
            let error = write(&at(full), "lost").unwrap_err();
            assert_eq!(error.to_string(), "cannot write /dev/full");
            assert!(!error.is_broken_pipe());
        }
        write(&Destination::Stdout, "").unwrap();
    }

    #[test]
    fn a_failing_flush_commits_none_of_the_files() {
        let full = Path::new("/dev/full");
        if !full.exists() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.xaif"), dir.path().join("b.json"));
        fs::write(&a, "old a").unwrap();
        let outputs: Vec<Output> = [&a, full, &b]
            .into_iter()
            .map(|path| {
                let mut output = Output::create(&at(path)).unwrap();
                output.write_all(b"new").unwrap();
                output
            })
            .collect();
        assert_eq!(commit_all(outputs).unwrap_err().shown, "/dev/full");
        assert_eq!(fs::read_to_string(&a).unwrap(), "old a");
        assert_eq!(entries(dir.path()), ["a.xaif"]);
    }

    #[test]
    fn a_failing_rename_leaves_the_outputs_after_it() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("sub")).unwrap();
        let (gone, kept) = (dir.path().join("sub/gone.json"), dir.path().join("kept.xaif"));
        fs::write(&kept, "old").unwrap();
        let mut outputs = Vec::new();
        for path in [&gone, &kept] {
            let mut output = Output::create(&at(path)).unwrap();
            output.write_all(b"new").unwrap();
            outputs.push(output);
        }
        // The first one's directory goes away (with its temporary) before the commit.
        fs::rename(dir.path().join("sub"), dir.path().join("moved")).unwrap();
        let error = commit_all(outputs).unwrap_err();
        assert_eq!(error.source.kind(), io::ErrorKind::NotFound);
        assert!(error.shown.ends_with("sub/gone.json"), "{error}");
        assert_eq!(fs::read_to_string(&kept).unwrap(), "old");
        assert_eq!(entries(dir.path()), ["kept.xaif", "moved"]);
    }

    #[test]
    fn what_cannot_be_written_is_refused_when_created() {
        let dir = tempfile::tempdir().unwrap();
        let error = Output::create(&at(&dir.path().join("missing/x.json"))).unwrap_err();
        assert_eq!(error.source.kind(), io::ErrorKind::NotFound);
        assert!(error.to_string().ends_with("missing/x.json"), "{error}");
        assert!(Output::create(&at(dir.path())).is_err());
        assert!(Output::create(&at(Path::new(""))).is_err());
        assert_eq!(entries(dir.path()), Vec::<String>::new());
    }

    #[test]
    fn descriptor_aliases_are_recognised() {
        assert_eq!(descriptor_alias(Path::new("/dev/stdout")), Some(Some(1)));
        assert_eq!(descriptor_alias(Path::new("/dev/fd/7")), Some(Some(7)));
        assert_eq!(descriptor_alias(Path::new("/proc/self/fd/2")), Some(Some(2)));
        assert_eq!(descriptor_alias(Path::new("/dev/null")), None);
        assert_eq!(descriptor_alias(Path::new("/dev/shm/out.xaif")), None);
        assert_eq!(Destination::from(OsString::from("-")), Destination::Stdout);
        assert_eq!(Destination::from(OsString::from("a.xaif")).shown(), "a.xaif");
    }

    #[test]
    fn a_spill_gives_back_what_it_was_given_over_its_memory() {
        let text: Vec<u8> = (0..100_000).map(|j| (j % 251) as u8).collect();
        let dir = tempfile::tempdir().unwrap();
        // In memory, in a temporary file, and in memory where none can be made.
        for (limit, in_dir, in_file) in
            [(1 << 20, dir.path().to_path_buf(), false), (1000, dir.path().to_path_buf(), true), (1000, dir.path().join("missing"), false)]
        {
            let mut spill = Spill::with_limit(limit);
            spill.dir = Some(in_dir);
            for piece in text.chunks(777) {
                spill.write_all(piece).unwrap();
            }
            assert_eq!((spill.len(), spill.file.is_some()), (text.len() as u64, in_file));
            for _ in 0..2 {
                let mut copied = Vec::new();
                assert_eq!(spill.copy_into(&mut copied).unwrap(), text.len() as u64);
                assert!(copied == text, "limit {limit}");
            }
            spill.write_all(b"more").unwrap();
            let mut copied = Vec::new();
            spill.copy_into(&mut copied).unwrap();
            assert_eq!(copied.len(), text.len() + 4);
            assert!(copied.ends_with(b"more"));
        }
        // The file is unnamed: nothing in its directory.
        assert_eq!(entries(dir.path()), Vec::<String>::new());
    }

    #[cfg(unix)]
    mod unix {
        use super::*;
        use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};

        #[test]
        fn a_replaced_file_keeps_its_mode_and_a_new_one_gets_the_default() {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("out.xaif");
            fs::write(&path, "old").unwrap();
            fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
            write(&at(&path), "new").unwrap();
            assert_eq!(fs::read_to_string(&path).unwrap(), "new");
            assert_eq!(fs::metadata(&path).unwrap().mode() & 0o7777, 0o640);
            let (plain, new) = (dir.path().join("plain"), dir.path().join("new.xaif"));
            fs::write(&plain, "").unwrap();
            write(&at(&new), "new").unwrap();
            assert_eq!(fs::metadata(&new).unwrap().mode(), fs::metadata(&plain).unwrap().mode());
        }

        #[test]
        fn a_symlink_is_written_through_and_stays() {
            let dir = tempfile::tempdir().unwrap();
            fs::create_dir(dir.path().join("real")).unwrap();
            let target = dir.path().join("real/out.xaif");
            fs::write(&target, "old").unwrap();
            let (link, dangling) = (dir.path().join("link.xaif"), dir.path().join("dangling.xaif"));
            symlink("real/out.xaif", &link).unwrap();
            symlink("real/made.xaif", &dangling).unwrap();
            write(&at(&link), "new").unwrap();
            write(&at(&dangling), "made").unwrap();
            assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
            assert!(fs::symlink_metadata(&dangling).unwrap().file_type().is_symlink());
            assert_eq!(fs::read_to_string(&target).unwrap(), "new");
            assert_eq!(fs::read_to_string(dir.path().join("real/made.xaif")).unwrap(), "made");
            assert_eq!(entries(&dir.path().join("real")), ["made.xaif", "out.xaif"]);
        }

        #[test]
        fn hard_links_all_see_the_new_contents() {
            let dir = tempfile::tempdir().unwrap();
            let (first, second) = (dir.path().join("a.xaif"), dir.path().join("b.xaif"));
            fs::write(&first, "old contents, longer than the new").unwrap();
            fs::hard_link(&first, &second).unwrap();
            let inode = fs::metadata(&first).unwrap().ino();
            let mut output = Output::create(&at(&first)).unwrap();
            output.write_all(b"new").unwrap();
            drop(output);
            assert_eq!(fs::read_to_string(&second).unwrap(), "old contents, longer than the new");
            write(&at(&first), "new").unwrap();
            assert_eq!(fs::read_to_string(&second).unwrap(), "new");
            assert_eq!(fs::metadata(&first).unwrap().ino(), inode);
            assert_eq!(entries(dir.path()), ["a.xaif", "b.xaif"]);
        }

        #[test]
        fn a_directory_we_may_not_write_keeps_its_files_in_place() {
            let dir = tempfile::tempdir().unwrap();
            let (locked, path) = (dir.path().join("locked"), dir.path().join("locked/out.xaif"));
            fs::create_dir(&locked).unwrap();
            fs::write(&path, "old").unwrap();
            fs::set_permissions(&locked, fs::Permissions::from_mode(0o555)).unwrap();
            // Root may write anyway: then the file is replaced as any other.
            let enforced = fs::write(locked.join("probe"), "").is_err();
            let inode = fs::metadata(&path).unwrap().ino();
            write(&at(&path), "new").unwrap();
            assert_eq!(fs::read_to_string(&path).unwrap(), "new");
            if enforced {
                assert_eq!(fs::metadata(&path).unwrap().ino(), inode);
                // Nor may we write a read-only file: refused before any work.
                fs::set_permissions(&path, fs::Permissions::from_mode(0o444)).unwrap();
                let error = Output::create(&at(&path)).unwrap_err();
                assert_eq!(error.source.kind(), io::ErrorKind::PermissionDenied);
            }
            fs::set_permissions(&locked, fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
}
