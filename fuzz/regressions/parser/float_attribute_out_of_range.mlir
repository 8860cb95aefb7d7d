// Regression: a float attribute outside double's range escapes parse as std::out_of_range
// from std::stod (parse_attrs.cpp), not a ParseError.
module attributes {foo = 1e999} {
}
