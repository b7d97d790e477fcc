//! Capture formats for rocescope.
