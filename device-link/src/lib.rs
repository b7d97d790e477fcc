//! Live attach for rocescope.
