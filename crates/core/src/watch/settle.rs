//! When a detection found on a session so far is final. A live feed sees a
//! session before it ends; most checks fire at the record they read, but a
//! few families judge something the next records complete, and what they
//! find on a prefix may still change. Shared by `looptune watch` (which
//! replays the records so far) and the live [`Detector`] (the Python
//! `Detector`), whose streams push a detection once decided and which
//! hands it out once settled here, as a replay would.
//!
//! [`Detector`]: crate::watch::Detector

use crate::detect::Detection;
use crate::event::{Record, Session};

/// When a detection found on the session so far is final. On a session cut
/// short, a family that judges a whole agent step judges the step still open
/// as if it had ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settle {
    /// At once: the check fires at the record it reads.
    Now,
    /// Once the next record confirms it (Blade's snapshots and stationarity).
    NextRecord,
    /// Once the step it is in has ended: a `turn` or `user` record starts
    /// the next (OpenHands, checked once per agent step; OpenRouter's SDK,
    /// which records a model turn's text once, at its last `content` record,
    /// known to be the last only when the turn ends).
    StepEnd,
}

impl Settle {
    /// The settling of a family's detections.
    pub fn of(family: &str) -> Settle {
        match family {
            "blade" => Settle::NextRecord,
            "openhands" | "openrouter-sdk" => Settle::StepEnd,
            _ => Settle::Now,
        }
    }

    /// Split the detections of a replay of `session` (the records read so
    /// far) into those final now and those that may still change.
    pub fn split(
        self,
        session: &Session,
        dets: Vec<Detection>,
    ) -> (Vec<Detection>, Vec<Detection>) {
        // Event numbers are 1-based: a detection at `event` is settled when
        // a later record (any, or one starting a step) has been read.
        let step = match self {
            Settle::StepEnd => session
                .events
                .iter()
                .rposition(|e| starts_step(&e.record))
                .map_or(0, |i| (session.first + i) as u32 + 1),
            _ => 0,
        };
        self.split_at(session.len() as u32, step, dets)
    }

    /// [`Settle::split`] for a session of `len` records whose last record
    /// that starts a step is record `step` (1-based; 0: none), as a live
    /// feed keeps them (it may have forgotten that record).
    pub fn split_at(
        self,
        len: u32,
        step: u32,
        dets: Vec<Detection>,
    ) -> (Vec<Detection>, Vec<Detection>) {
        let bound = match self {
            Settle::Now => return (dets, Vec::new()),
            Settle::NextRecord => len,
            Settle::StepEnd => step,
        };
        dets.into_iter().partition(|d| d.event < bound)
    }
}

/// Whether a record starts an agent step: a `turn` or `user` record.
pub fn starts_step(record: &Record) -> bool {
    matches!(record, Record::Turn | Record::User { .. })
}
