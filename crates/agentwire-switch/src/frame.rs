//! Placeholder: the frame decoder lands here.
