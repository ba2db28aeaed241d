// Data sets, splits, metrics and designs; CSV reading.
// The only library source that includes these definitions (core/config.hpp).
#include <dnncost/io/csv_impl.hpp>
#include <dnncost/train/dataset_impl.hpp>
#include <dnncost/train/design_impl.hpp>
#include <dnncost/train/metrics_impl.hpp>
#include <dnncost/train/noise_impl.hpp>
#include <dnncost/train/split_impl.hpp>
#include <dnncost/train/train_data_impl.hpp>
#include <dnncost/train/upsample_impl.hpp>
