//! looptune for Python (`looptune._looptune`): the command line in-process,
//! and a live [`Detector`] fed canonical records one by one. The Python
//! package (`python/looptune`) wraps these in its typed API.

use looptune::error::Error;
use looptune_core::detect::{DetectorConfig, Selection, Setting};
use looptune_core::watch::Detector as Live;
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;
use std::sync::{Mutex, PoisonError};

// The same allocator as the binary: a replay allocates a string per record.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

create_exception!(_looptune, LooptuneError, PyException, "Any looptune error.");
create_exception!(
    _looptune,
    InputError,
    LooptuneError,
    "Bad input: a log, labels or grid file (the message names the file, line and field)."
);
create_exception!(
    _looptune,
    ConfigError,
    LooptuneError,
    "Bad detector configuration or usage: an unknown profile, parameter or value."
);

/// The exception an error raises: the CLI's message, its class by kind.
fn to_py(e: Error) -> PyErr {
    let text = e.to_string();
    match e {
        Error::Config(_) | Error::Usage(_) => ConfigError::new_err(text),
        _ => InputError::new_err(text),
    }
}

/// Run the command line with `args` (without the program name) in this
/// process; returns (exit code, stdout bytes). What the CLI would print as
/// `error: ...` comes back as an exception instead.
#[pyfunction]
fn run_cli(py: Python<'_>, args: Vec<String>) -> PyResult<(i32, Vec<u8>)> {
    let mut out = Vec::new();
    let done = py.detach(|| looptune::cli::run_from(args, &mut out));
    done.map(|code| (code, out)).map_err(to_py)
}

/// The command line as the `looptune` console script runs it: `argv` with
/// the program name first; prints as the binary does and returns the exit code.
#[pyfunction]
fn main(py: Python<'_>, argv: Vec<String>) -> i32 {
    py.detach(|| looptune::cli::main_from(argv))
}

/// A Parquet file's rows as an Arrow C stream in a PyCapsule named
/// `arrow_array_stream` (the Arrow PyCapsule interface): pyarrow, polars,
/// pandas (through pyarrow) and DuckDB read it without a copy through CSV.
#[pyfunction]
fn parquet_stream<'py>(py: Python<'py>, path: &str) -> PyResult<Bound<'py, PyCapsule>> {
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let file = std::fs::File::open(path).map_err(|e| to_py(Error::io(path, e)))?;
    let bad = |e: parquet::errors::ParquetError| {
        InputError::new_err(format!("{path}: not a readable Parquet file ({e})"))
    };
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(bad)?
        .build()
        .map_err(bad)?;
    let stream = arrow_array::ffi_stream::FFI_ArrowArrayStream::new(Box::new(reader));
    PyCapsule::new(py, stream, Some(c"arrow_array_stream".to_owned()))
}

/// Every profile, family by family: (family, profile, what it reproduces).
#[pyfunction]
fn profiles() -> Vec<(&'static str, &'static str, &'static str)> {
    looptune_core::detect::families()
        .into_iter()
        .flat_map(|f| {
            f.profiles()
                .into_iter()
                .map(move |p| (f.name(), p.name, p.about))
        })
        .collect()
}

/// A detection as Python gets it: (kind, turn, event, strike, detail).
type HitTuple = (&'static str, u32, u32, u32, String);

/// A detector fed one canonical record at a time, firing as it would in
/// `looptune replay --all` at the same record: the core's
/// [`looptune_core::watch::Detector`], which parses only the record fed and
/// feeds it to each check's state (amortised O(1) a record) for the families
/// converted to streams, and replays the records so far for the others
/// (`incremental` says which).
///
/// Safe to share between threads: a feed holds the detector's lock from
/// reading the state to storing it (it runs without the GIL, so two
/// threads feeding at once raised `Already borrowed` and lost records).
#[pyclass(module = "looptune._looptune")]
struct Detector {
    family: &'static str,
    profile: String,
    incremental: bool,
    state: Mutex<Live>,
}

impl Detector {
    /// Run `f` on the detector under its lock, the GIL released while
    /// waiting for it and while `f` runs (a thread holding the GIL while it
    /// waits would stall the one that holds the lock).
    fn with_state<T: Send>(&self, py: Python<'_>, f: impl FnOnce(&mut Live) -> T + Send) -> T {
        py.detach(|| {
            // A panic in a feed leaves the state as the last feed stored it.
            let mut live = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            f(&mut live)
        })
    }
}

#[pymethods]
impl Detector {
    /// `profile`: a named profile (`looptune detectors` lists them);
    /// `set`: parameters as `--set` takes them (`{"tool_call_threshold": 4}`);
    /// `config`: instead of both, a configuration file as `looptune export
    /// --for looptune` writes it and `replay --config FILE.toml` loads it.
    #[new]
    #[pyo3(signature = (profile = None, set = None, config = None))]
    fn new(
        profile: Option<&str>,
        set: Option<Vec<(String, String)>>,
        config: Option<std::path::PathBuf>,
    ) -> PyResult<Self> {
        let configs: Vec<DetectorConfig> = match config {
            Some(path) => {
                if profile.is_some() || set.is_some() {
                    return Err(ConfigError::new_err(format!(
                        "config={}: a configuration file is the whole detector; drop profile and set",
                        path.display()
                    )));
                }
                vec![looptune_core::export::config_file::load(&path).map_err(to_py)?]
            }
            None => {
                let mut sets = Vec::new();
                for (k, v) in set.unwrap_or_default() {
                    let text = format!("{k}={v}");
                    sets.push(
                        Setting::parse(&text).map_err(|e| ConfigError::new_err(e.to_string()))?,
                    );
                }
                let selection = Selection {
                    families: Vec::new(),
                    profiles: vec![profile.unwrap_or("gemini-latest").to_string()],
                    sets,
                };
                selection.resolve().map_err(to_py)?
            }
        };
        // One profile (or file) is one configuration.
        let config = configs
            .into_iter()
            .next()
            .expect("a selection resolves to one");
        let (family, profile) = (config.family, config.profile.clone());
        let live = Live::new(config).map_err(to_py)?;
        Ok(Detector {
            family,
            profile,
            incremental: live.incremental(),
            state: Mutex::new(live),
        })
    }

    /// The family of the detector (`gemini`, `opencode`, ...).
    #[getter]
    fn family(&self) -> &'static str {
        self.family
    }

    /// The profile the detector runs.
    #[getter]
    fn profile(&self) -> &str {
        &self.profile
    }

    /// Whether a record costs amortised O(1) (the family's checks are fed
    /// record by record) rather than a replay of the session so far.
    #[getter]
    fn incremental(&self) -> bool {
        self.incremental
    }

    /// Records fed since the last reset.
    #[getter]
    fn records(&self, py: Python<'_>) -> u32 {
        self.with_state(py, |live| live.records())
    }

    /// Records held now: the rules' windows once the session has a `turn`
    /// record (the records no rule reads again are forgotten).
    #[getter]
    fn records_held(&self, py: Python<'_>) -> usize {
        self.with_state(py, |live| live.records_held())
    }

    /// Feed one canonical record, as one JSON object's text (the Python
    /// wrapper serialises dicts); returns the detections that fire now, as
    /// (kind, turn, event, strike, detail) tuples.
    fn feed_json(&self, py: Python<'_>, line: &str) -> PyResult<Vec<HitTuple>> {
        if line.contains('\n') {
            return Err(InputError::new_err(
                "a record is one JSON object on one line (no newline)",
            ));
        }
        let found = self.with_state(py, move |live| live.feed_line(line));
        let found = found.map_err(|e| match e {
            // The error is the new record's; its line is its number.
            Error::Line { line, message, .. } => {
                InputError::new_err(format!("record {line}: {message}"))
            }
            e => to_py(e),
        })?;
        Ok(tuples(found))
    }

    /// The session has ended: the detections that fire at its end (a
    /// settling family's open step), then nothing until `reset`.
    fn finish(&self, py: Python<'_>) -> Vec<HitTuple> {
        tuples(self.with_state(py, |live| live.finish()))
    }

    /// Forget the session: the next record starts a new one.
    fn reset(&self, py: Python<'_>) {
        self.with_state(py, |live| live.reset())
    }
}

fn tuples(found: Vec<looptune_core::replay::Detection>) -> Vec<HitTuple> {
    found
        .into_iter()
        .map(|d| (d.kind, d.turn, d.event, d.strike, d.detail))
        .collect()
}

/// The Rust extension behind the `looptune` package.
#[pymodule]
fn _looptune(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run_cli, m)?)?;
    m.add_function(wrap_pyfunction!(main, m)?)?;
    m.add_function(wrap_pyfunction!(profiles, m)?)?;
    m.add_function(wrap_pyfunction!(parquet_stream, m)?)?;
    m.add_class::<Detector>()?;
    m.add("LooptuneError", m.py().get_type::<LooptuneError>())?;
    m.add("InputError", m.py().get_type::<InputError>())?;
    m.add("ConfigError", m.py().get_type::<ConfigError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
