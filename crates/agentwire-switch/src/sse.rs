//! Placeholder: the SSE parser lands here.
