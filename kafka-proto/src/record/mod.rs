//! RecordBatch v2.
