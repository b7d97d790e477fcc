//! Discrete-event simulator of the BALBOA RoCE stack, its peers and the
//! network between them: the default source of the rocescope workbench.
//!
//! This crate grows into the full simulator (endpoints, switch, faults,
//! service slots, profiler). Its first piece is the wire model every other
//! part times frames with.

pub mod wire;
