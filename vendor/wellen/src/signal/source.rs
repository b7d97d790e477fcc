// Copyright 2023-2024 The Regents of the University of California
// Copyright 2024-2026 Cornell University
// released under BSD 3-Clause License
// author: Kevin Laeufer <laeufer@cornell.edu>

use crate::signal::transform::transform_signal;
use crate::{Hierarchy, Signal, SignalEncoding, SignalRef, SignalValueRef, TimeTableIdx};
use rustc_hash::FxHashMap;

/// (rocescope) Given a signal's changes in time order, as a loaded
/// [`Signal`]'s `iter_changes` gives them, until it returns `false`: that
/// change is not taken, and no more are given.
pub type ChangeVisitor<'a> = Box<dyn FnMut(TimeTableIdx, SignalValueRef<'_>) -> bool + Send + 'a>;

pub trait SignalSourceImplementation: Sync + Send {
    /// Loads new signals.
    /// Many implementations take advantage of loading multiple signals at a time.
    fn load_signals(
        &mut self,
        ids: &[SignalRef],
        types: &[SignalEncoding],
        multi_threaded: bool,
    ) -> Vec<Signal>;
    /// (rocescope) See [`SignalSource::visit_signal_prefixes`]; `None`
    /// where the source has no cheaper way than a whole load (the default),
    /// which is then made and visited.
    fn visit_signal_prefixes(
        &mut self,
        _ids: &[SignalRef],
        _types: &[SignalEncoding],
        _visitors: &mut [ChangeVisitor<'_>],
        _multi_threaded: bool,
    ) -> Option<Vec<u64>> {
        None
    }
    /// Print memory size / speed statistics.
    fn print_statistics(&self);
}

pub struct SignalSource {
    inner: Box<dyn SignalSourceImplementation>,
}

impl SignalSource {
    pub fn new(inner: Box<dyn SignalSourceImplementation + Send + Sync>) -> Self {
        Self { inner }
    }

    /// Loads new signals.
    /// Many implementations take advantage of loading multiple signals at a time.
    /// A note on derived signals: this function will load the underlying signals and compute the
    /// derived signals. However, since we do not have access to signals that were loaded
    /// in a previous call to this function, performance may be suboptimal.
    /// Thus, if you can, consider handling derived signals in the caller and only passing
    /// non-derived signals that are needed to this function.
    pub fn load_signals(
        &mut self,
        ids: &[SignalRef],
        hierarchy: &Hierarchy,
        multi_threaded: bool,
    ) -> Vec<Signal> {
        let (derived, signals): (Vec<_>, Vec<_>) =
            ids.iter().partition(|&&s| hierarchy.is_derived_signal(s));
        let mut out = self.load_non_derived_signals(signals, hierarchy, multi_threaded);
        let mut others = self.load_derived_signals(derived, hierarchy, multi_threaded);
        out.append(&mut others);
        out
    }

    /// (rocescope) For a caller that keeps only a signal's first changes:
    /// each signal's changes, exactly those `load_signals` gives, handed to
    /// its visitor (`visitors[i]` for `ids[i]`) in time order until the
    /// visitor refuses one; returns, for each, how many changes it was not
    /// given (the refused one and every later one), an exact count. From
    /// the in-memory blocks of a VCD or GHW body, one block is decoded at a
    /// time into one buffer and the blocks after the refused change are
    /// only counted, so no signal is built whole. Derived signals, and
    /// sources without a cheaper way, are loaded whole and visited.
    pub fn visit_signal_prefixes(
        &mut self,
        ids: &[SignalRef],
        hierarchy: &Hierarchy,
        visitors: &mut [ChangeVisitor<'_>],
        multi_threaded: bool,
    ) -> Vec<u64> {
        assert_eq!(ids.len(), visitors.len(), "one visitor per signal");
        if ids.iter().all(|&s| !hierarchy.is_derived_signal(s)) {
            let enc: Vec<_> = ids
                .iter()
                .map(|i| hierarchy.get_signal_tpe(*i).unwrap())
                .collect();
            if let Some(not_given) =
                self.inner
                    .visit_signal_prefixes(ids, &enc, visitors, multi_threaded)
            {
                return not_given;
            }
        }
        let loaded = self.load_signals(ids, hierarchy, multi_threaded);
        ids.iter()
            .zip(visitors.iter_mut())
            .map(|(id, visit)| {
                let signal = loaded
                    .iter()
                    .find(|s| s.signal_ref() == *id)
                    .expect("every signal asked for is loaded");
                let total = signal.time_indices().len();
                let given = signal
                    .iter_changes()
                    .take_while(|(idx, value)| visit(*idx, *value))
                    .count();
                (total - given) as u64
            })
            .collect()
    }

    fn load_non_derived_signals(
        &mut self,
        mut ids: Vec<SignalRef>,
        hierarchy: &Hierarchy,
        multi_threaded: bool,
    ) -> Vec<Signal> {
        ids.sort();
        ids.dedup();
        debug_assert!(ids.iter().all(|&s| !hierarchy.is_derived_signal(s)));
        let enc: Vec<_> = ids
            .iter()
            .map(|i| hierarchy.get_signal_tpe(*i).unwrap())
            .collect();
        let signals = self.inner.load_signals(&ids, &enc, multi_threaded);
        assert_eq!(
            signals.len(),
            ids.len(),
            "the signal source must always return the correct number of signals!"
        );
        signals
    }

    fn load_derived_signals(
        &mut self,
        mut ids: Vec<SignalRef>,
        hierarchy: &Hierarchy,
        multi_threaded: bool,
    ) -> Vec<Signal> {
        ids.sort();
        ids.dedup();
        debug_assert!(ids.iter().all(|&s| hierarchy.is_derived_signal(s)));

        let transforms: Vec<_> = ids
            .iter()
            .map(|s| hierarchy.get_derived_signal(*s).unwrap())
            .collect();
        let underlying_ids: Vec<_> = transforms
            .iter()
            .flat_map(|d| d.inputs())
            .cloned()
            .collect();
        let underlying_signals: FxHashMap<_, _> = self
            .load_non_derived_signals(underlying_ids, hierarchy, multi_threaded)
            .into_iter()
            .map(|s| (s.idx, s))
            .collect();
        ids.into_iter()
            .zip(transforms)
            .map(|(s, transform)| {
                let inputs: Vec<_> = transform
                    .inputs()
                    .iter()
                    .map(|i| &underlying_signals[i])
                    .collect();
                let mut signal = transform_signal(transform, &inputs);
                signal.idx = s;
                signal
            })
            .collect()
    }

    /// Print memory size / speed statistics.
    pub fn print_statistics(&self) {
        self.inner.print_statistics();
    }
}
