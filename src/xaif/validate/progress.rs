//! How far a validation on another thread has got, for the transformation that runs beside
//! it: the input checked so far, the verdict, and the streaming driver's survey.

use super::Survey;

/// How far a validation running on another thread has got: the input up to an offset
/// (counted after a byte-order mark, as the reader counts) checked without error, or the
/// verdict. Offsets advance one child of the `CallGraph` at a time.
#[derive(Debug, Default)]
pub struct Progress {
    state: std::sync::Mutex<ProgressState>,
    changed: std::sync::Condvar,
}

#[derive(Debug, Default)]
struct ProgressState {
    checked_through: usize,
    /// `Some(false)` as soon as an error is found; `Some(true)` when all is checked without one.
    verdict: Option<bool>,
    survey: SurveyState,
}

impl ProgressState {
    /// The answer for the input up to `offset`: its verdict once there is one, `true` once it
    /// is checked, `None` before.
    fn checked_for(&self, offset: usize) -> Option<bool> {
        match self.verdict {
            Some(verdict) => Some(verdict),
            None if self.checked_through >= offset => Some(true),
            None => None,
        }
    }

    /// The survey once the first scan is over (taken: later calls get `Some(None)`), `None`
    /// while it may still come. `Some(None)` where it made none, or an error ended the checks
    /// first.
    fn take_survey(&mut self) -> Option<Option<Result<Survey, &'static str>>> {
        match std::mem::replace(&mut self.survey, SurveyState::Gone) {
            SurveyState::Found(found) => Some(Some(found)),
            SurveyState::Gone => Some(None),
            SurveyState::Pending if self.verdict.is_some() => Some(None),
            SurveyState::Pending => {
                self.survey = SurveyState::Pending;
                None
            }
        }
    }
}

/// The streaming driver's [`Survey`], which the checks' first scan finds on the way.
#[derive(Debug, Default)]
enum SurveyState {
    /// Not known yet.
    #[default]
    Pending,
    /// Found (or the reason the document must be read whole), not yet taken.
    Found(Result<Survey, &'static str>),
    /// The checks take another way (the whole tree), or it was taken.
    Gone,
}

impl Progress {
    /// What [`Progress::wait_for`] would return, without waiting: `None` while the input up to
    /// `offset` is not checked yet and no error was found.
    pub fn checked_for(&self, offset: usize) -> Option<bool> {
        let state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        state.checked_for(offset)
    }

    /// Waits until the input up to `offset` is checked: `true` when it holds no error, `false`
    /// as soon as the checks found one anywhere (the waiting side should stop: the findings
    /// are what the command reports).
    pub fn wait_for(&self, offset: usize) -> bool {
        let mut state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        loop {
            match state.checked_for(offset) {
                Some(answer) => return answer,
                None => state = self.changed.wait(state).unwrap_or_else(std::sync::PoisonError::into_inner),
            }
        }
    }

    /// The [`Survey`] of the document, once the checks' first scan has found it; `None` when
    /// they do not scan for it (small or malformed documents, those checked whole) or found an
    /// error first: the driver then surveys the document itself.
    pub fn take_survey(&self) -> Option<Result<Survey, &'static str>> {
        let mut state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        loop {
            match state.take_survey() {
                Some(found) => return found,
                None => state = self.changed.wait(state).unwrap_or_else(std::sync::PoisonError::into_inner),
            }
        }
    }

    /// [`Progress::take_survey`] without waiting: `None` while the first scan may still find
    /// it.
    pub fn try_take_survey(&self) -> Option<Option<Result<Survey, &'static str>>> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take_survey()
    }

    /// The first scan is over: `found` is its survey, `None` if it made none.
    pub(super) fn survey_found(&self, found: Option<Result<Survey, &'static str>>) {
        self.update(|state| {
            if matches!(state.survey, SurveyState::Pending) {
                state.survey = found.map_or(SurveyState::Gone, SurveyState::Found);
            }
        });
    }

    fn update(&self, change: impl FnOnce(&mut ProgressState)) {
        let mut state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        change(&mut state);
        self.changed.notify_all();
    }

    /// The input up to `offset` is checked, without an error so far.
    pub(super) fn advance(&self, offset: usize) {
        self.update(|state| state.checked_through = state.checked_through.max(offset));
    }

    /// An error was found; the checks go on, for the findings.
    pub(super) fn fail(&self) {
        self.update(|state| state.verdict = Some(false));
    }

    /// All is checked: `valid` when no error was found (an error found before stays).
    pub(crate) fn finish(&self, valid: bool) {
        self.update(|state| {
            if state.verdict.is_none() {
                state.verdict = Some(valid);
            }
        });
    }
}
