// preview.png's encoding by libpng, and the bound of its size.
//
// libpng reports errors by longjmp to the setjmp of the caller: the function
// that calls setjmp (write_png) holds only plain pointers, so the jump skips
// no destructor; the structs are freed by the RAII owner in its caller.
#include <png.h>

#include <csetjmp>
#include <cstdio>
#include <cstring>

#include "error.h"
#include "preview.h"

namespace blosc2fs {

namespace {

// What the callbacks see (libpng's io and error pointers): a buffer reserved
// to the size bound, so that appending never allocates inside libpng.
struct PngSink {
  uint8_t* data;
  size_t size;
  size_t capacity;
  char message[160];
};

void on_write(png_structp png, png_bytep bytes, size_t length) {
  auto* sink = static_cast<PngSink*>(png_get_io_ptr(png));
  if (length > sink->capacity - sink->size) png_error(png, "the PNG is larger than its bound");
  std::memcpy(sink->data + sink->size, bytes, length);
  sink->size += length;
}

void on_flush(png_structp) {}

[[noreturn]] void on_error(png_structp png, png_const_charp message) {
  auto* sink = static_cast<PngSink*>(png_get_error_ptr(png));
  std::snprintf(sink->message, sizeof sink->message, "%s", message ? message : "unknown error");
  png_longjmp(png, 1);
}

void on_warning(png_structp, png_const_charp) {}

int color_type_of(int channels) {
  switch (channels) {
    case 1: return PNG_COLOR_TYPE_GRAY;
    case 2: return PNG_COLOR_TYPE_GRAY_ALPHA;
    case 3: return PNG_COLOR_TYPE_RGB;
    default: return PNG_COLOR_TYPE_RGBA;
  }
}

// 1 on success; 0 after a libpng error (its text in sink->message).
int write_png(png_structp png, png_infop info, PngSink* sink, const PreviewImage* image, png_bytepp rows,
              png_textp text) {
  if (setjmp(png_jmpbuf(png))) return 0;
  png_set_write_fn(png, sink, on_write, on_flush);
  png_set_IHDR(png, info, png_uint_32(image->width), png_uint_32(image->height), 8, color_type_of(image->channels),
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_set_text(png, info, text, 1);
  png_write_info(png, info);
  png_write_image(png, rows);
  png_write_end(png, info);
  return 1;
}

// The largest text describe() makes: 16 dimensions of 19 digits and the rest.
constexpr int64_t kMaxDescription = 1024;

int64_t bound_for(int64_t width, int64_t height, int channels) {
  const int64_t raw = height * (1 + width * channels);
  // zlib's bound for any deflate parameters (deflateBound's conservative case).
  const int64_t deflated = raw + (raw + 7) / 8 + (raw + 63) / 64 + 11;
  const int64_t idat_chunks = deflated / 8192 + 1;  // libpng writes IDATs of its 8 KiB buffer
  const int64_t text = 12 + int64_t(sizeof "Description") + kMaxDescription;
  return 8 + 25 + text + deflated + 12 * idat_chunks + 12;
}

}  // namespace

int64_t preview_png_size_bound(const PreviewPlan& plan) {
  int channels = plan.channels;
  if (plan.mode == PreviewMode::gray && plan.dtype.kind == PreviewDtype::Kind::floating) channels = 2;  // alpha
  return bound_for(plan.width, plan.height, channels);
}

Bytes encode_png(const PreviewImage& image) {
  if (image.width <= 0 || image.height <= 0 || image.width > PNG_UINT_31_MAX || image.height > PNG_UINT_31_MAX ||
      image.channels < 1 || image.channels > 4 ||
      image.pixels.size() != size_t(image.width * image.height * image.channels))
    throw FormatError("preview.png: a picture of " + std::to_string(image.width) + " x " +
                      std::to_string(image.height) + " cannot be encoded");
  std::string description = image.description.substr(0, size_t(kMaxDescription));
  Bytes out(size_t(bound_for(image.width, image.height, image.channels)));
  PngSink sink{out.data(), 0, out.size(), {}};
  std::vector<png_bytep> rows(size_t(image.height));
  for (int64_t r = 0; r < image.height; ++r)
    rows[size_t(r)] = const_cast<png_bytep>(image.pixels.data() + r * image.width * image.channels);
  png_text text{};
  text.compression = PNG_TEXT_COMPRESSION_NONE;
  text.key = const_cast<png_charp>("Description");
  text.text = description.data();
  text.text_length = description.size();

  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &sink, on_error, on_warning);
  if (!png) throw std::bad_alloc();
  png_infop info = png_create_info_struct(png);
  struct Owner {
    png_structp* png;
    png_infop* info;
    ~Owner() { png_destroy_write_struct(png, info); }
  } owner{&png, &info};
  if (!info) throw std::bad_alloc();
  if (!write_png(png, info, &sink, &image, rows.data(), &text))
    throw FormatError(std::string("preview.png: libpng: ") + sink.message);
  out.resize(sink.size);
  return out;
}

}  // namespace blosc2fs
