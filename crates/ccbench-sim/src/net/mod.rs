//! Network elements.
