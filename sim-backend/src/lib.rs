//! BALBOA stack simulator for rocescope.
