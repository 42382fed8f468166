// Package jsondup finds a member given twice in a JSON object, anywhere in a document: which
// of the two counts depends on the reader, so klt refuses such input where it matters (an
// event, an --env-vars file, FilterCriteria) and says where the second one is.
package jsondup
