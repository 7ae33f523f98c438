//! The messages of pprof's `profile.proto` (github.com/google/pprof,
//! `proto/profile.proto`), declared for `prost` from the published schema:
//! field numbers and types as given there. Strings are indices into
//! `string_table`, whose entry 0 is the empty string.

/// `Profile`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Profile {
    /// `sample_type = 1`: what each sample value measures.
    #[prost(message, repeated, tag = "1")]
    pub sample_type: Vec<ValueType>,
    /// `sample = 2`.
    #[prost(message, repeated, tag = "2")]
    pub sample: Vec<Sample>,
    /// `mapping = 3`.
    #[prost(message, repeated, tag = "3")]
    pub mapping: Vec<Mapping>,
    /// `location = 4`.
    #[prost(message, repeated, tag = "4")]
    pub location: Vec<Location>,
    /// `function = 5`.
    #[prost(message, repeated, tag = "5")]
    pub function: Vec<Function>,
    /// `string_table = 6`.
    #[prost(string, repeated, tag = "6")]
    pub string_table: Vec<String>,
    /// `time_nanos = 9`: when the profile was taken, ns since the epoch.
    #[prost(int64, tag = "9")]
    pub time_nanos: i64,
    /// `duration_nanos = 10`.
    #[prost(int64, tag = "10")]
    pub duration_nanos: i64,
    /// `period_type = 11`.
    #[prost(message, optional, tag = "11")]
    pub period_type: Option<ValueType>,
    /// `period = 12`.
    #[prost(int64, tag = "12")]
    pub period: i64,
    /// `comment = 13`: string indices.
    #[prost(int64, repeated, tag = "13")]
    pub comment: Vec<i64>,
    /// `default_sample_type = 14`: string index of a sample type's name.
    #[prost(int64, tag = "14")]
    pub default_sample_type: i64,
}

/// `ValueType`: `type = 1`, `unit = 2` (string indices).
#[derive(Clone, PartialEq, prost::Message)]
pub struct ValueType {
    /// `type = 1`.
    #[prost(int64, tag = "1")]
    pub r#type: i64,
    /// `unit = 2`.
    #[prost(int64, tag = "2")]
    pub unit: i64,
}

/// `Sample`: a stack (leaf first) and its values.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Sample {
    /// `location_id = 1`: leaf first.
    #[prost(uint64, repeated, tag = "1")]
    pub location_id: Vec<u64>,
    /// `value = 2`: one per sample type.
    #[prost(int64, repeated, tag = "2")]
    pub value: Vec<i64>,
    /// `label = 3`.
    #[prost(message, repeated, tag = "3")]
    pub label: Vec<Label>,
}

/// `Label`: `key = 1`, `str = 2`, `num = 3`, `num_unit = 4`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Label {
    /// `key = 1`.
    #[prost(int64, tag = "1")]
    pub key: i64,
    /// `str = 2`.
    #[prost(int64, tag = "2")]
    pub str: i64,
    /// `num = 3`.
    #[prost(int64, tag = "3")]
    pub num: i64,
    /// `num_unit = 4`.
    #[prost(int64, tag = "4")]
    pub num_unit: i64,
}

/// `Mapping`: a loaded module.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Mapping {
    /// `id = 1`.
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// `memory_start = 2`.
    #[prost(uint64, tag = "2")]
    pub memory_start: u64,
    /// `memory_limit = 3`.
    #[prost(uint64, tag = "3")]
    pub memory_limit: u64,
    /// `file_offset = 4`.
    #[prost(uint64, tag = "4")]
    pub file_offset: u64,
    /// `filename = 5`.
    #[prost(int64, tag = "5")]
    pub filename: i64,
    /// `build_id = 6`.
    #[prost(int64, tag = "6")]
    pub build_id: i64,
    /// `has_functions = 7`.
    #[prost(bool, tag = "7")]
    pub has_functions: bool,
    /// `has_filenames = 8`.
    #[prost(bool, tag = "8")]
    pub has_filenames: bool,
    /// `has_line_numbers = 9`.
    #[prost(bool, tag = "9")]
    pub has_line_numbers: bool,
}

/// `Location`: an address and the source lines it stands for.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Location {
    /// `id = 1`.
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// `mapping_id = 2`.
    #[prost(uint64, tag = "2")]
    pub mapping_id: u64,
    /// `address = 3`.
    #[prost(uint64, tag = "3")]
    pub address: u64,
    /// `line = 4`.
    #[prost(message, repeated, tag = "4")]
    pub line: Vec<Line>,
}

/// `Line`: `function_id = 1`, `line = 2`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Line {
    /// `function_id = 1`.
    #[prost(uint64, tag = "1")]
    pub function_id: u64,
    /// `line = 2`.
    #[prost(int64, tag = "2")]
    pub line: i64,
}

/// `Function`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Function {
    /// `id = 1`.
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// `name = 2`.
    #[prost(int64, tag = "2")]
    pub name: i64,
    /// `system_name = 3`.
    #[prost(int64, tag = "3")]
    pub system_name: i64,
    /// `filename = 4`.
    #[prost(int64, tag = "4")]
    pub filename: i64,
    /// `start_line = 5`.
    #[prost(int64, tag = "5")]
    pub start_line: i64,
}
