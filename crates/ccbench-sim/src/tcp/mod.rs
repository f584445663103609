//! The TCP endpoints.
