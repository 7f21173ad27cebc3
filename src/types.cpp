// Names and sizes of the public enums.
#include <chorus/chorus.hpp>

namespace chorus {

size_t sizeOf(DataType type) {
  switch (type) {
    case DataType::Int8:
    case DataType::Uint8:
    case DataType::Float8e4m3:
    case DataType::Float8e5m2:
      return 1;
    case DataType::Float16:
    case DataType::Bfloat16:
      return 2;
    case DataType::Int32:
    case DataType::Uint32:
    case DataType::Float32:
      return 4;
    case DataType::Int64:
    case DataType::Uint64:
    case DataType::Float64:
      return 8;
  }
  return 0;
}

bool isValid(DataType type) { return sizeOf(type) != 0; }

bool isValid(RedOp op) {
  int v = static_cast<int>(op);
  return v >= 0 && v < chorusNumOps;
}

const char* toString(DataType type) {
  switch (type) {
    case DataType::Int8:
      return "int8";
    case DataType::Uint8:
      return "uint8";
    case DataType::Int32:
      return "int32";
    case DataType::Uint32:
      return "uint32";
    case DataType::Int64:
      return "int64";
    case DataType::Uint64:
      return "uint64";
    case DataType::Float16:
      return "half";
    case DataType::Float32:
      return "float";
    case DataType::Float64:
      return "double";
    case DataType::Bfloat16:
      return "bfloat16";
    case DataType::Float8e4m3:
      return "f8e4m3";
    case DataType::Float8e5m2:
      return "f8e5m2";
  }
  return "invalid-type";
}

const char* toString(RedOp op) {
  switch (op) {
    case RedOp::Sum:
      return "sum";
    case RedOp::Prod:
      return "prod";
    case RedOp::Max:
      return "max";
    case RedOp::Min:
      return "min";
    case RedOp::Avg:
      return "avg";
  }
  return "invalid-op";
}

const char* toString(Result result) {
  switch (result) {
    case Result::Success:
      return "no error";
    case Result::SystemError:
      return "unhandled system error";
    case Result::InternalError:
      return "internal error";
    case Result::InvalidArgument:
      return "invalid argument";
    case Result::InvalidUsage:
      return "invalid usage";
    case Result::RemoteError:
      return "remote process exited or there was a network error";
    case Result::InProgress:
      return "operation in progress";
    case Result::Timeout:
      return "timeout";
  }
  return "unknown result code";
}

}  // namespace chorus
